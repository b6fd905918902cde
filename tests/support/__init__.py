"""What the tests share and import: the sizes and the shared versions (``versions``), the
checks a written dataset passes (``dataset_checks``), stand-ins for a browser, GCS and the
Hub, and small corpora and vectors. Test modules import from here, never from each other."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]  # the repository's root
