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
