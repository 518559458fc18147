"""dqn: HERTI's deadline-aware DQN planner (in progress; see the package modules)."""
SPECS = ()
