"""Files hetcc writes and reads: the one atomic writer, artifact locks, bounded readers."""
