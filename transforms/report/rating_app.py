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
"""

import html
import json

SCRIPT = r"""
"use strict";
const job = JSON.parse(document.getElementById("job").textContent);
const $ = (id) => document.getElementById(id);
const storeKey = (rater) => `dmc-rate:${job.job}:${rater}`;
const currentKey = `dmc-rate:${job.job}:current`;

function hash(text) {  // FNV-1a, 32 bits
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
function shuffled(values, key) {  // Fisher-Yates driven by mulberry32 seeded by the key
  let state = hash(`${job.seed}:${key}`);
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = values.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

let state = null;  // {rater, trained, answers: [...]}
let order = [];    // the rater's questions
let shownAt = 0;
let cursor = -1;   // the option the arrows point at

function save() {
  localStorage.setItem(storeKey(state.rater), JSON.stringify(state));
  localStorage.setItem(currentKey, state.rater);
}

function start(rater) {
  rater = rater.trim();
  if (!rater) { $("rater-error").textContent = "Enter your rater id."; return; }
  const saved = localStorage.getItem(storeKey(rater));
  state = saved ? JSON.parse(saved) : {rater: rater, trained: 0, answers: []};
  order = shuffled(job.questions.map((_, i) => i), `${rater}:order`).map((i) => job.questions[i]);
  save();
  show();
}

function image(item) {
  if (item.image.kind === "missing") {
    return `<div class="placeholder" data-image-kind="missing">image not available<br>` +
      `${escape(item.image_file)}</div>`;
  }
  return `<img src="${escape(item.image.src)}" data-image-kind="${item.image.kind}" ` +
    `alt="image ${escape(item.image_file)} (not loaded)">`;
}
function escape(text) {
  const span = document.createElement("span");
  span.textContent = String(text);
  return span.innerHTML.replace(/"/g, "&quot;");
}

function progress() {
  const done = state.answers.length, total = order.length;
  $("progress").textContent = state.trained < job.training.length
    ? `training ${state.trained + 1} of ${job.training.length}`
    : `${Math.min(done + 1, total)} of ${total}` + (done ? ` · ${done} answered` : "");
  $("bar").style.width = `${(100 * done) / Math.max(total, 1)}%`;
  $("rater").textContent = `rater ${state.rater}`;
}

function show() {
  $("start-form").hidden = true;
  document.activeElement.blur();  // keys go to the questions, not the hidden rater id field
  $("task").hidden = false;
  progress();
  cursor = -1;
  if (state.trained < job.training.length) return showTraining(job.training[state.trained]);
  if (state.answers.length >= order.length) return showDone();
  const item = order[state.answers.length];
  const positions = shuffled(item.options.map((_, i) => i), `${state.rater}:${item.example_id}`);
  $("card").innerHTML =
    `<figure>${image(item)}</figure><div class="question">` +
    `<p class="prompt">Which caption describes the image best?</p><ol class="options">` +
    positions.map((option, shown) =>
      `<li><button class="option" data-option="${option}" data-shown="${shown + 1}">` +
      `<kbd>${shown + 1}</kbd><span>${escape(item.options[option])}</span></button></li>`
    ).join("") + `</ol><p class="hint">Click a caption or press 1-${positions.length}; ` +
    `↑ ↓ and Enter work too.</p></div>`;
  $("card").dataset.exampleId = item.example_id;
  $("card").dataset.mode = "question";
  for (const button of document.querySelectorAll("button.option")) {
    button.addEventListener("click", () => answer(Number(button.dataset.option)));
  }
  shownAt = performance.now();
}

function showTraining(item) {
  $("card").innerHTML =
    `<figure>${image(item)}</figure><div class="question"><p class="prompt">Training: ` +
    `the marked caption is the right one. Choose the caption that describes the image ` +
    `best: what it shows, how many, what they do.</p><ol class="options">` +
    item.options.map((text, option) =>
      `<li><div class="option${option === item.label ? " target" : ""}" data-option="${option}">` +
      `<kbd>${option + 1}</kbd><span>${escape(text)}</span>` +
      `${option === item.label ? '<b class="badge">✓ right</b>' : ""}</div></li>`
    ).join("") + `</ol><p><button id="next">Next (Enter)</button></p></div>`;
  $("card").dataset.exampleId = item.example_id;
  $("card").dataset.mode = "training";
  $("next").addEventListener("click", nextTraining);
}

function nextTraining() {
  state.trained += 1;
  save();
  show();
}

function answer(option) {
  const item = order[state.answers.length];
  const seconds = Math.round(performance.now() - shownAt) / 1000;
  state.answers.push({example_id: item.example_id, option: option,
                      option_text: item.options[option], seconds: seconds});
  save();
  show();
}

function showDone() {
  $("card").innerHTML = `<div class="done"><p>All ${order.length} questions answered. ` +
    `Thank you! Download your answers and send the file back.</p></div>`;
  $("card").dataset.mode = "done";
  $("card").dataset.exampleId = "";
}

function download(kind) {
  if (!state) return;
  const name = `answers-${job.job}-${state.rater}.${kind}`;
  let body;
  if (kind === "json") {
    body = JSON.stringify({job: job.job, rater: state.rater, answers: state.answers}, null, 1);
  } else {
    const quote = (value) => `"${String(value).replace(/"/g, '""')}"`;
    body = "rater,example_id,option,option_text,seconds\n" + state.answers.map((a) =>
      [state.rater, a.example_id, a.option, a.option_text, a.seconds].map(quote).join(",")
    ).join("\n") + "\n";
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([body], {type: kind === "json"
    ? "application/json" : "text/csv"}));
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
}

document.addEventListener("keydown", (event) => {
  if (!state || event.target.tagName === "INPUT") return;
  const mode = $("card").dataset.mode;
  if (mode === "training" && (event.key === "Enter" || event.key === "ArrowRight")) {
    event.preventDefault();
    return nextTraining();
  }
  if (mode !== "question") return;
  const buttons = [...document.querySelectorAll("button.option")];
  const digit = Number(event.key);
  if (Number.isInteger(digit) && digit >= 1 && digit <= buttons.length) {
    return answer(Number(buttons[digit - 1].dataset.option));
  }
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    cursor = (cursor + step + buttons.length) % buttons.length;
    buttons.forEach((button, i) => button.classList.toggle("cursor", i === cursor));
  } else if (event.key === "Enter" && cursor >= 0) {
    event.preventDefault();
    answer(Number(buttons[cursor].dataset.option));
  }
});

$("start-form").addEventListener("submit", (event) => {
  event.preventDefault();
  start($("rater-id").value);
});
$("json").addEventListener("click", () => download("json"));
$("csv").addEventListener("click", () => download("csv"));
$("switch").addEventListener("click", () => {
  localStorage.removeItem(currentKey);
  location.reload();
});
const current = localStorage.getItem(currentKey);
if (current) start(current);
"""

STYLE = """
body { margin: 0; background: #f3f4f6; color: #1f2328;
  font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { display: flex; gap: 16px; align-items: center; padding: 10px 24px; background: #fff;
  border-bottom: 1px solid #d0d7de; }
header h1 { font-size: 17px; margin: 0; }
#progress, #rater { color: #57606a; font-size: 14px; }
.track { flex: 1; height: 6px; background: #e5e7eb; border-radius: 3px; }
#bar { height: 6px; background: #1a7f37; border-radius: 3px; width: 0; }
main { max-width: 1000px; margin: 24px auto; padding: 0 24px; }
#start-form, #card { background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
  padding: 20px; }
#card { display: grid; grid-template-columns: 400px 1fr; gap: 24px; }
#card[data-mode="done"] { display: block; }
figure { margin: 0; }
figure img, .placeholder { width: 400px; height: 300px; object-fit: contain; border-radius: 4px;
  background: #e5e7eb; display: block; }
.placeholder { box-sizing: border-box; border: 2px dashed #afb8c1; color: #57606a;
  text-align: center; padding-top: 130px; font-size: 13px; overflow-wrap: anywhere; }
.prompt { margin-top: 0; font-weight: 600; }
.options { list-style: none; padding: 0; margin: 0; }
.option { display: flex; gap: 10px; align-items: baseline; width: 100%; text-align: left;
  font: inherit; background: #fff; border: 1px solid #d0d7de; border-radius: 6px;
  padding: 8px 10px; margin: 0 0 8px; box-sizing: border-box; }
button.option { cursor: pointer; }
button.option:hover, button.option.cursor { border-color: #0969da; background: #ddf4ff; }
.option.target { background: #dafbe1; border-color: #1a7f37; font-weight: 600; }
kbd { font: 12px ui-monospace, monospace; border: 1px solid #afb8c1; border-radius: 4px;
  padding: 0 5px; color: #57606a; }
.badge { margin-left: auto; color: #1a7f37; font-size: 13px; white-space: nowrap; }
.hint { color: #57606a; font-size: 13px; }
footer { max-width: 1000px; margin: 0 auto; padding: 0 24px; color: #57606a; font-size: 14px; }
"""


def job_json(job: dict) -> str:
    """The job as JSON that cannot end its <script> element: ``</`` is written ``<\\/``.

    >>> job_json({"a": "</script>"})
    '{"a": "<\\\\/script>"}'
    """
    return json.dumps(job, ensure_ascii=False).replace("</", "<\\/")


def render_app(job: dict) -> str:
    """The page; ``job``: {"job", "seed", "title", "training": [...], "questions": [...]}."""
    title = html.escape(job["title"])
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{STYLE}</style>
</head>
<body>
<header><h1>{title}</h1><span id="rater"></span><span id="progress"></span>
<div class="track"><div id="bar"></div></div></header>
<main>
<form id="start-form"><p>Each question shows an image and a few captions: choose the one that
describes the image best. A few training questions with the right caption marked come first.
Your answers are kept in this browser, so you can close the page and come back.</p>
<p><label>Rater id <input id="rater-id" autocomplete="off" required></label>
<button type="submit">Start</button> <span id="rater-error"></span></p></form>
<div id="task" hidden><div id="card"></div></div>
</main>
<footer><p>Answers so far: <button id="json">download JSON</button>
<button id="csv">download CSV</button> · <button id="switch">another rater</button></p></footer>
<script type="application/json" id="job">{job_json(job)}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""
