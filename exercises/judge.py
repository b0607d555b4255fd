"""Judge your exercises, each the way its kind is judged (docs/exercises.md); the judge is engineering/judge.py.

    python exercises/judge.py                           the exercises, in the order to do them
    python exercises/judge.py layernorm                 yours in exercises/guided/03_layernorm.py
    python exercises/judge.py layernorm --track derive  yours in exercises/derive/03_layernorm.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's folder: no install needed

from engineering import judge  # noqa: E402

if __name__ == "__main__":
    sys.exit(judge.main(sys.argv[1:]))
