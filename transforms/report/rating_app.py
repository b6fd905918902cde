"""The rating app: one self-contained HTML page that asks a rater the questions of a job.

``render_app(job)`` takes what the app may show (``app_data`` of ``pipelines/rate.py``:
training items with their target, the questions without their labels) and returns the
page; the data sits in the page as JSON, so the folder works offline from a file:// URL.
The images are the preview's (``transforms/report/preview.py``: a copied file, the
``image_url``, or a placeholder).

What the page does: asks for a rater id, shows the training items (the target marked,
as the paper's Figure 1), then each question in a per-rater order with its options in a
per-rater order (both seeded by the job's seed, the rater and the item, so a reload
shows the same), answered by a click, by the keys 1..k, or by the arrows and Enter. The
progress and the answers are kept in localStorage after every answer, so a reload
resumes; the answers are exported as JSON or CSV: rater, example id, chosen option (its
index in the dataset's order, and its text) and the seconds the question was shown.

The page is ``assets/rating_app.html`` with ``rating_app.css`` and ``rating_app.js`` inlined.
"""

import html
import json
from string import Template

from transforms.report import assets

# Written as JSON escapes inside the page's <script>: no text of the job can then end the
# element (``</script>``) or open an HTML comment (``<!--``) that swallows the app's script.
SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def job_json(job: dict) -> str:
    """The job as JSON that no string in it can break out of, or comment out, the page's
    <script> element with: ``<``, ``>`` and ``&`` are written as ``\\u`` escapes, which
    JSON.parse reads back as they were (these characters occur only inside strings).

    >>> print(job_json({"a": "<!--<script> & </script>"}))
    {"a": "\\u003c!--\\u003cscript\\u003e \\u0026 \\u003c/script\\u003e"}
    """
    return json.dumps(job, ensure_ascii=False).translate(SCRIPT_SAFE)


def render_app(job: dict) -> str:
    """The page; ``job``: {"job", "seed", "title", "training": [...], "questions": [...]}."""
    page = Template(assets.read("rating_app.html"))
    return page.substitute(
        title=html.escape(job["title"]),
        style=assets.read("rating_app.css"),
        job=job_json(job),
        script=assets.read("rating_app.js"),
    )
