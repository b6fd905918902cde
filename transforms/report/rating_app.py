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


def job_json(job: dict) -> str:
    """The job as JSON that cannot end its <script> element: ``</`` is written ``<\\/``.

    >>> job_json({"a": "</script>"})
    '{"a": "<\\\\/script>"}'
    """
    return json.dumps(job, ensure_ascii=False).replace("</", "<\\/")


def render_app(job: dict) -> str:
    """The page; ``job``: {"job", "seed", "title", "training": [...], "questions": [...]}."""
    page = Template(assets.read("rating_app.html"))
    return page.substitute(
        title=html.escape(job["title"]),
        style=assets.read("rating_app.css"),
        job=job_json(job),
        script=assets.read("rating_app.js"),
    )
