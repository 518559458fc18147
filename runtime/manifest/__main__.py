"""``python -m hetcc.runtime.manifest > runtime/manifest.schema.json``: print the generated schema."""
import sys

from .schema import schema_text

sys.stdout.write(schema_text())
