"""``python -m hetcc.cli``: enter like the console script (signals during the imports handled)."""
from hetcc._entry import main

main()
