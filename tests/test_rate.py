"""Human evaluation: Table 2's arithmetic and the import's checks on hand-made answers, the
rating app answered in headless chromium, and the human-filtered subset as a version."""

import csv
import hashlib
import io
import json
import math
import os
import pathlib

import pytest
from matplotlib.image import imsave

from pipelines.options import GenerateOptions
from pipelines.rate import (
    ANSWERS_FILE,
    APP_DIRECTORY,
    APP_FILE,
    CROWD_FILE,
    JOB_FILE,
    REPORT_FILE,
    RESULTS_FILE,
    main,
    subset_name,
)
from pipelines.store.claims import claimed
from pipelines.store.versions import completed_dataset, read_manifest, verify_version
from schemas.layout import CROISSANT_FILE, PARQUET, TFDS_INFO_FILE, shard_pattern
from tests.support.browser import Browser
from tests.support.version_checks import version_files
from tests.support.versions import SMALL
from transforms.errors import InputError
from transforms.files import read_parquet_files
from transforms.report.rating_app import render_app
from transforms.report.ratings import (
    DUPLICATE,
    GOLD,
    INVALID_OPTION,
    RATED,
    TEXT_MISMATCH,
    TRAINING,
    TRAINING_ITEM,
    UNKNOWN_INSTANCE,
    Answer,
    Item,
    check_answers,
    failed_gold,
    gold_scores,
    instance_results,
    kept_instances,
    read_answers,
    table_text,
    table_two,
)
from transforms.trainer.metrics import binomial_std

# Arithmetic on hand-made answer sets.


def rated(example_id: str, label: int, options: int = 5) -> Item:
    return Item(
        example_id, RATED, tuple(f"caption {i} of {example_id}" for i in range(options)), label
    )


def answer(rater: str, example_id: str, option: int, seconds: float = 5.0) -> Answer:
    return Answer(rater, example_id, option, seconds, f"hand-made: {rater} {example_id}")


def answers_with_rights(
    items: dict[str, Item], rights: dict[str, int], raters: int
) -> list[Answer]:
    """The first ``rights[id]`` raters choose the label, the others the next option."""
    return [
        answer(
            f"r{r}",
            example_id,
            items[example_id].label
            if r < right
            else (items[example_id].label + 1) % len(items[example_id].options),
        )
        for example_id, right in rights.items()
        for r in range(raters)
    ]


def test_table_two_reproduces_the_papers_numbers_from_its_agreement_counts():
    """Ding et al. 2016: 673, 155, 103 and 69 of 1,000 instances with 3, 2, 1, 0 of 3 raters
    right give 81.1% (2432/3000) 1-human, 82.8% 3-human and 67.3 / 82.8 / 93.1% at least."""
    counts = {3: 673, 2: 155, 1: 103, 0: 69}
    rights = {f"{j}_{i}": j for j, n in counts.items() for i in range(n)}
    items = {example_id: rated(example_id, label=2) for example_id in rights}
    table = table_two(instance_results(answers_with_rights(items, rights, 3), items), 3)
    assert (table["one_human"]["count"], table["one_human"]["of"]) == (2432, 3000)
    assert round(100 * table["one_human"]["share"], 1) == 81.1
    assert (table["n_human"]["count"], table["n_human"]["of"]) == (828, 1000)
    at_least = {
        j: round(100 * row["at_least"]["share"], 1) for j, row in table["agreement"].items()
    }
    assert at_least == {3: 67.3, 2: 82.8, 1: 93.1, 0: 100.0}
    assert {j: row["exactly"]["count"] for j, row in table["agreement"].items()} == counts
    assert table["n_human"]["std"] == pytest.approx(math.sqrt(0.828 * 0.172 / 1000))
    assert table["one_human"]["std"] == pytest.approx(math.sqrt(2432 / 3000 * 568 / 3000 / 3000))
    assert table["chance"] == pytest.approx(0.2)
    text = table_text(table, "Table 2")
    assert "1-human (correct responses)" in text and "81.1% ± 0.7" in text
    assert "3-human (>= 2 of 3 right)" in text and "82.8% ± 1.2" in text


def test_table_two_counts_only_fully_rated_instances_and_chance_follows_the_option_count():
    items = {
        "a": rated("a", 0, options=2),
        "b": rated("b", 1, options=4),
        "c": rated("c", 3, options=5),
        "d": rated("d", 0, options=5),  # one answer only
        "e": rated("e", 0, options=5),  # nobody answered
    }
    answers = answers_with_rights({k: items[k] for k in "abc"}, {"a": 2, "b": 1, "c": 0}, 2)
    answers.append(answer("r0", "d", 0))
    results = instance_results(answers, items)
    assert [(r["example_id"], r["answers"], r["right"]) for r in results] == [
        ("a", 2, 2),
        ("b", 2, 1),
        ("c", 2, 0),
        ("d", 1, 1),
        ("e", 0, 0),
    ]
    table = table_two(results, 2)
    assert (table["instances"], table["incomplete"], table["over_rated"]) == (3, 2, 0)
    assert (table["one_human"]["count"], table["one_human"]["of"]) == (3, 6)
    assert (table["n_human"]["count"], table["n_human"]["of"]) == (2, 3)  # >= 1 of 2
    assert table["chance"] == pytest.approx((1 / 2 + 1 / 4 + 1 / 5) / 3)
    assert kept_instances(results, 2, 1) == ["a", "b"]
    assert kept_instances(results, 2, 2) == ["a"]


def test_binomial_std_edge_cases():
    assert binomial_std(0, 0) == 0.0
    assert binomial_std(10, 10) == 0.0
    assert binomial_std(1, 4) == pytest.approx(math.sqrt(0.25 * 0.75 / 4))


# The import's checks.


def test_every_answer_is_counted_or_reported_under_its_reason():
    items = {
        "a": rated("a", 1, options=4),
        "b": rated("b", 0, options=2),
        "g": Item("g", GOLD, ("x", "y"), 1),
        "t": Item("t", TRAINING, ("x", "y"), 0),
    }
    given = [
        answer("r1", "a", 1),
        answer("r1", "a", 2),  # the rater answered it before
        answer("r1", "zzz", 0),  # not in the job
        answer("r1", "t", 0),  # a training item
        answer("r1", "b", 2),  # b has two options
        Answer("r1", "g", 1, 5.0, "x", option_text="x"),  # option 1 is "y"
        answer("r2", "a", 1, seconds=0.5),  # too fast: flagged
        answer("r2", "g", 0),
        answer("r1", "b", 0),
    ]
    checked = check_answers(given, items, min_seconds=1.0, drop_too_fast=False)
    assert {reason: len(values) for reason, values in checked.skipped.items()} == {
        DUPLICATE: 1,
        UNKNOWN_INSTANCE: 1,
        TRAINING_ITEM: 1,
        INVALID_OPTION: 1,
        TEXT_MISMATCH: 1,
    }
    assert [a.where for a in checked.too_fast] == [given[6].where]
    assert checked.answers == [given[0], given[6], given[7], given[8]]
    assert "option 2, the item has 2" in checked.skipped[INVALID_OPTION][0]
    dropped = check_answers(given, items, min_seconds=1.0, drop_too_fast=True)
    assert dropped.answers == [given[0], given[7], given[8]]
    scores = gold_scores(checked.answers, items)
    assert scores == {"r2": (0, 1)}
    assert failed_gold(scores, 0.8) == ["r2"]
    assert failed_gold({"r": (4, 5)}, 0.8) == []


def test_answers_files_of_the_app_and_of_a_crowd_platform_read_alike():
    app_json = json.dumps(
        {
            "job": "j",
            "rater": "r1",
            "answers": [{"example_id": "a", "option": 2, "option_text": "z", "seconds": 3.5}],
        }
    ).encode()
    app_csv = b"rater,example_id,option,option_text,seconds\nr1,a,2,z,3.5\n"
    crowd = (
        b"HITId,WorkerId,WorkTimeInSeconds,Input.example_id,Answer.option\nH1,r1,3.5,a,2\n"
        b"H2,r1,4,b,\n"
    )
    expected = ("r1", "a", 2, 3.5)
    for name, data in (("a.json", app_json), ("a.csv", app_csv), ("batch.csv", crowd)):
        answers, _ = read_answers(name, data)
        assert [(a.rater, a.example_id, a.option, a.seconds) for a in answers[:1]] == [expected]
    assert read_answers("a.csv", app_csv)[0][0].option_text == "z"
    assert read_answers("batch.csv", crowd)[1] == ["batch.csv: row 3: no option"]
    with pytest.raises(InputError, match=r"x\.csv: no column option, seconds \(crowd results: "):
        read_answers("x.csv", b"rater,example_id\nr,a\n")
    with pytest.raises(InputError, match=r"a\.json: answers of job j, not of k; import each"):
        read_answers("a.json", app_json, job="k")
    assert read_answers("a.json", app_json, job="j")[0][0].rater == "r1"
    with pytest.raises(InputError, match=r"y\.json: not an answers file"):
        read_answers("y.json", b'{"answers": []}')


# The whole kit on a generated dataset.

INSTANCES, TRAINING_ITEMS, GOLD_ITEMS = 6, 2, 2
QUESTIONS = INSTANCES + GOLD_ITEMS


def png(colour: tuple[float, float, float]) -> bytes:
    buffer = io.BytesIO()
    imsave(buffer, [[colour] * 40] * 30, format="png")
    return buffer.getvalue()


def read_dev(version: str) -> list[dict]:
    return [
        row
        for table in read_parquet_files(shard_pattern(version, PARQUET, "dev"))
        for row in table.to_pylist()
    ]


def dev_images(version: str, folder: pathlib.Path) -> pathlib.Path:
    """A picture for every dev image, so every rated question shows a copied file."""
    for index, name in enumerate(sorted({row["image_file"] for row in read_dev(version)})):
        (folder / name).write_bytes(png((0.2 + index % 5 * 0.15, 0.5, 0.8 - index % 3 * 0.2)))
    return folder


@pytest.fixture(scope="module")
def job(small_dataset, tmp_path_factory) -> pathlib.Path:
    version, _ = small_dataset
    images = dev_images(version, tmp_path_factory.mktemp("images"))
    output = tmp_path_factory.mktemp("job")
    argv = ["export", "--dataset", version, "--output", str(output), "--images", str(images)]
    counts = ["--instances", str(INSTANCES), "--training", str(TRAINING_ITEMS)]
    assert main([*argv, *counts, "--gold", str(GOLD_ITEMS), "--seed", "3"]) == 0
    return output


def labels(job_folder: pathlib.Path) -> dict[str, dict]:
    return {
        item["example_id"]: item
        for item in json.loads((job_folder / JOB_FILE).read_text())["items"]
    }


def card(browser: Browser) -> dict:
    return browser.evaluate(
        "(() => { const c = document.getElementById('card'); return {mode: c.dataset.mode, "
        "id: c.dataset.exampleId, progress: document.getElementById('progress').textContent, "
        "shown: [...document.querySelectorAll('button.option')].map(b => Number(b.dataset.option))"
        "}; })()"
    )


def reload_app(browser: Browser) -> None:
    """Reloads and waits for the app to render its restored state: the new document is
    complete before the app's script has drawn the card (it read nothing then)."""
    browser.reload()
    browser.wait_until("!!(document.getElementById('card') || {dataset: {}}).dataset.mode")


def image_kind(browser: Browser) -> str:
    return browser.evaluate("document.querySelector('#card [data-image-kind]').dataset.imageKind")


def answer_question(browser: Browser, how: str, option: int, shown: list[int]) -> None:
    """Chooses ``option`` by a click, its number key, or the arrows and Enter."""
    position = shown.index(option)
    if how == "click":
        browser.click(f'button.option[data-option="{option}"]')
    elif how == "key":
        browser.press(str(position + 1))
    else:
        for _ in range(position + 1):
            browser.press("ArrowDown")
        browser.press("Enter")


def rate(browser: Browser, rater: str, key: dict[str, dict], plan, how: str, reload_at=None):
    """Starts as ``rater``, goes through training, answers every question as ``plan(index,
    item)`` says (True: the target), reloading once at question ``reload_at``; returns
    {example_id: option chosen} and the option order shown per question."""
    browser.click("#rater-id")
    browser.type_text(rater)
    browser.press("Enter")
    for index in range(TRAINING_ITEMS):
        shown = card(browser)
        assert shown["mode"] == "training" and key[shown["id"]]["kind"] == "training"
        assert shown["progress"] == f"training {index + 1} of {TRAINING_ITEMS}"
        marked = browser.evaluate(
            "[...document.querySelectorAll('.option.target')].map(e => Number(e.dataset.option))"
        )
        assert marked == [key[shown["id"]]["label"]]
        browser.press("Enter")
    return rate_questions(browser, key, plan, how, reload_at)


def rate_questions(browser: Browser, key: dict[str, dict], plan, how: str, reload_at=None):
    """Answers every question left as ``plan`` says; see :func:`rate`."""
    chosen, orders = {}, {}
    for index in range(QUESTIONS):
        shown = card(browser)
        if index == reload_at:
            reload_app(browser)
            assert card(browser) == shown  # the same question, its options in the same order
        assert shown["mode"] == "question" and shown["progress"].startswith(
            f"{index + 1} of {QUESTIONS}"
        )
        item = key[shown["id"]]
        assert item["kind"] in (RATED, GOLD) and shown["id"] not in chosen
        # dev's images were copied; train's (gold items) have no file and no URL
        assert image_kind(browser) == ("local" if item["kind"] == RATED else "missing")
        assert sorted(shown["shown"]) == list(range(len(item["options"])))
        right = plan(index, item)
        option = item["label"] if right else (item["label"] + 1) % len(item["options"])
        answer_question(browser, how, option, shown["shown"])
        chosen[shown["id"]], orders[shown["id"]] = option, shown["shown"]
    assert card(browser)["mode"] == "done"
    return chosen, orders


def download(browser: Browser, button: str, folder: pathlib.Path) -> pathlib.Path:
    browser.click(button)
    return folder / browser.downloaded()


def test_the_app_is_answered_in_chromium_and_the_import_reports_the_chosen_table(
    job, tmp_path, capsys
):
    key = labels(job)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser = Browser()
    try:
        browser.allow_downloads(str(downloads))
        browser.load((job / APP_DIRECTORY / APP_FILE).as_uri())
        right, right_orders = rate(
            browser, "always-right", key, lambda i, item: True, "click", reload_at=3
        )
        right_file = download(browser, "#json", downloads)
        browser.navigated(lambda: browser.click("#switch"))
        wrong, _ = rate(browser, "always-wrong", key, lambda i, item: False, "key")
        wrong_file = download(browser, "#csv", downloads)
        browser.navigated(lambda: browser.click("#switch"))
        half, half_orders = rate(
            browser, "first-half", key, lambda i, item: i < QUESTIONS // 2, "arrows"
        )
        half_file = download(browser, "#json", downloads)
    finally:
        browser.close()
    assert right_file.name.endswith("always-right.json") and wrong_file.suffix == ".csv"
    assert right_orders != half_orders  # options shuffled per rater
    assert (
        set(right)
        == set(wrong)
        == set(half)
        == {k for k, v in key.items() if v["kind"] != TRAINING}
    )

    files = ",".join(str(path) for path in (right_file, wrong_file, half_file))
    assert main(["import", "--job", str(job), "--answers", files]) == 0
    printed = capsys.readouterr().out
    version = json.loads((job / JOB_FILE).read_text())["dataset"]
    ratings = pathlib.Path(version) / "ratings" / json.loads((job / JOB_FILE).read_text())["job"]
    report = json.loads((ratings / REPORT_FILE).read_text())
    table = report["table"]
    rated_ids = [k for k, v in key.items() if v["kind"] == RATED]
    expected_right = {
        example_id: 1 + (half[example_id] == key[example_id]["label"]) for example_id in rated_ids
    }
    assert table["instances"] == INSTANCES and table["raters"] == 3
    assert table["one_human"]["count"] == sum(expected_right.values())
    assert table["one_human"]["of"] == 3 * INSTANCES
    assert table["n_human"]["count"] == sum(n >= 2 for n in expected_right.values())
    assert table["agreement"]["3"]["exactly"]["count"] == 0  # one rater is always wrong
    assert table["agreement"]["0"]["exactly"]["count"] == 0  # one is always right
    assert table["agreement"]["2"]["exactly"]["count"] == sum(
        n == 2 for n in expected_right.values()
    )
    results = [json.loads(line) for line in (ratings / RESULTS_FILE).read_text().splitlines()]
    assert {r["example_id"]: r["right"] for r in results} == expected_right
    assert {r["example_id"]: dict(zip(r["raters"], r["chosen"], strict=True)) for r in results} == {
        k: {"always-right": right[k], "always-wrong": wrong[k], "first-half": half[k]}
        for k in rated_ids
    }
    # Scripted answers take milliseconds (more on a busy machine): those under the default
    # 2 s are flagged, none dropped.
    seconds = [a["seconds"] for a in json.loads(right_file.read_text())["answers"]]
    seconds += [a["seconds"] for a in json.loads(half_file.read_text())["answers"]]
    with open(wrong_file, encoding="utf-8") as handle:
        seconds += [float(row["seconds"]) for row in csv.DictReader(handle)]
    assert len(seconds) == 3 * QUESTIONS and all(0 < s < 60 for s in seconds)
    assert report["too_fast"]["count"] == sum(s < 2.0 for s in seconds) > 0
    assert report["counted"] == report["rows"] == 3 * QUESTIONS
    gold_ids = [k for k, v in key.items() if v["kind"] == GOLD]
    half_gold = sum(half[k] == key[k]["label"] for k in gold_ids)
    assert report["gold"]["first-half"] == {"right": half_gold, "answered": GOLD_ITEMS}
    assert report["gold"]["always-right"] == {"right": GOLD_ITEMS, "answered": GOLD_ITEMS}
    assert report["failed_gold"] == ["always-wrong"] + (
        ["first-half"] if half_gold < 0.8 * GOLD_ITEMS else []
    )
    assert "rater always-wrong failed the gold items: 0 of 2 right" in printed
    assert "3-human (>= 2 of 3 right)" in printed
    assert len((ratings / ANSWERS_FILE).read_text().splitlines()) == 1 + 3 * QUESTIONS
    verify_version(version)  # the ratings beside it are not part of the version

    # A file sent twice: its answers are duplicates, reported, and the table does not move.
    resent = tmp_path / "resent.json"
    resent.write_bytes(right_file.read_bytes())
    again = [
        "import",
        "--job",
        str(job),
        "--answers",
        f"{files},{resent}",
        "--output",
        str(tmp_path / "again"),
    ]
    assert main([*again, "--drop_failed_raters"]) == 0
    capsys.readouterr()
    report = json.loads((tmp_path / "again" / REPORT_FILE).read_text())
    assert report["skipped"]["duplicate"]["count"] == QUESTIONS
    failed = len(report["failed_gold"])
    assert report["skipped"]["failed_gold"]["count"] == QUESTIONS * failed
    assert report["counted"] + QUESTIONS * (1 + failed) == report["rows"]
    assert report["table"]["raters"] == 3 and report["table"]["instances"] == 0
    assert report["table"]["incomplete"] == INSTANCES

    # The subset: rated instances at least two of the three got right, as a completed version.
    output = tmp_path / "human"
    assert main(["filter", "--ratings", str(ratings), "--output", str(output)]) == 0
    assert "human-filtered subset written to" in capsys.readouterr().out
    subset = completed_dataset(str(output))
    manifest = read_manifest(subset)
    kept = sorted(k for k, n in expected_right.items() if n >= 2)
    assert (
        manifest["human_filter"]["kept"] == len(kept) and manifest["human_filter"]["min_right"] == 2
    )
    assert manifest["human_filter"]["ratings"] == str(ratings)
    assert sorted(row["example_id"] for row in read_dev(subset)) == kept
    card_text = (pathlib.Path(subset) / "dataset" / "README.md").read_text()
    assert f"holds the {len(kept)} instances the raters" in " ".join(card_text.split())
    source, filtered = version_files(version), version_files(subset)
    same = {
        path
        for path in source
        if not path.startswith(("dataset/parquet/dev", "dataset/tfrecord/dev", "dataset/mcic/dev"))
    }
    # what describes the dev split: the card, statistics, Croissant and TFDS metadata
    described = ("README.md", "statistics.json", CROISSANT_FILE, TFDS_INFO_FILE)
    changed = {
        f"dataset/{name}" for name in (*described, "decoy_similarities.png", "split_sizes.png")
    }
    assert {path for path in same - changed if source[path] != filtered[path]} == set()
    assert main(["filter", "--ratings", str(ratings), "--output", str(output)]) == 0
    assert capsys.readouterr().out.startswith("up to date: ")


# Texts that ended, or commented out, the page's <script> when only "</" was escaped (no
# "-->" among them: it would close the comment the first one opens).
PAYLOADS = ("<!--<script>", "</script><script>document.title = 'x'</script>", "& ]]> &amp;")


def test_no_text_of_the_job_can_stop_the_app_in_chromium(job, tmp_path):
    page = (job / APP_DIRECTORY / APP_FILE).read_text(encoding="utf-8")
    start = page.index('<script type="application/json" id="job">')
    embedded = page[page.index(">", start) + 1 : page.index("</script>", start)]
    shown = json.loads(embedded)
    shown["title"] = PAYLOADS[0]
    first = shown["training"][0]
    first["options"] = [*PAYLOADS, *first["options"]][: len(first["options"])]
    first["image_file"], first["image"] = PAYLOADS[0], {"kind": "missing", "src": ""}
    hostile = job / APP_DIRECTORY / "hostile.html"
    hostile.write_text(render_app(shown), encoding="utf-8")
    browser = Browser()
    try:
        browser.load(hostile.as_uri())
        browser.click("#rater-id")
        browser.type_text("r1")
        browser.press("Enter")
        browser.wait_until("document.getElementById('card').dataset.mode === 'training'")
        texts = browser.evaluate(
            "[...document.querySelectorAll('#card .option span')].map(e => e.textContent)"
        )
        title = browser.evaluate("document.querySelector('h1').textContent")
        placeholder = browser.evaluate("document.querySelector('#card .placeholder').textContent")
    finally:
        browser.close()
    assert texts == first["options"] and title == PAYLOADS[0]
    assert placeholder == f"image not available{PAYLOADS[0]}"


def test_crowd_upload_and_its_results_give_the_same_table(job, tmp_path, capsys):
    """A crowd platform's results for crowd.csv: one worker picks each row's first shown
    option, another the target (found through the option_i_index columns)."""
    key = labels(job)
    with open(job / CROWD_FILE, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == QUESTIONS and {row["example_id"] for row in rows} == {
        k for k, v in key.items() if v["kind"] != TRAINING
    }
    results = tmp_path / "batch_results.csv"
    with open(results, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["HITId", "WorkerId", "WorkTimeInSeconds", "Input.example_id", "Answer.option"]
        )
        for row in rows:
            item = key[row["example_id"]]
            k = int(row["num_options"])
            indexes = [int(row[f"option_{i}_index"]) for i in range(1, k + 1)]
            assert [row[f"option_{i}"] for i in range(1, k + 1)] == [
                item["options"][i] for i in indexes
            ]
            writer.writerow(["h", "W-first", 30, row["example_id"], indexes[0]])
            writer.writerow(["h", "W-right", 30, row["example_id"], item["label"]])
    output = tmp_path / "ratings"
    argv = ["import", "--job", str(job), "--answers", str(results), "--output", str(output)]
    assert main(argv) == 0
    report = json.loads((output / REPORT_FILE).read_text())
    first_right = sum(
        int(row["option_1_index"]) == key[row["example_id"]]["label"]
        for row in rows
        if key[row["example_id"]]["kind"] == RATED
    )
    assert report["too_fast"]["count"] == 0 and report["counted"] == 2 * QUESTIONS
    assert report["table"]["instances"] == 0 and report["table"]["incomplete"] == INSTANCES
    one_human = [r for r in map(json.loads, (output / RESULTS_FILE).read_text().splitlines())]
    assert sum(r["right"] for r in one_human) == INSTANCES + first_right
    assert "left out of the table: 6 with fewer answers, 0 with more" in capsys.readouterr().out


def test_the_filter_claims_its_version_as_generate_does(small_dataset, job, tmp_path, capsys):
    """While another run holds the subset's claim, the filter stops with generate's one-line
    error and touches nothing; once it is released, the filter clears what that run left
    and publishes, its counters the source run's (none made up for the subset)."""
    key = labels(job)
    answers = tmp_path / "batch_results.csv"
    with open(answers, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["HITId", "WorkerId", "WorkTimeInSeconds", "Input.example_id", "Answer.option"]
        )
        for example_id, item in key.items():
            for worker in ("W1", "W2", "W3") if item["kind"] != TRAINING else ():
                writer.writerow(["h", worker, 30, example_id, item["label"]])
    ratings = tmp_path / "ratings"
    argv = ["import", "--job", str(job), "--answers", str(answers), "--output", str(ratings)]
    assert main(argv) == 0
    report = json.loads((ratings / REPORT_FILE).read_text())
    checksums = {
        name: hashlib.sha256((ratings / name).read_bytes()).hexdigest()
        for name in (REPORT_FILE, RESULTS_FILE)
    }
    output = tmp_path / "human"
    version = output / "versions" / subset_name(report["version"], checksums, 2)
    argv = ["filter", "--ratings", str(ratings), "--output", str(output)]
    capsys.readouterr()
    with claimed(str(version)) as owner:
        left = version / "dataset" / "parquet" / "dev" / "dev-00000-of-00001.parquet"
        left.parent.mkdir(parents=True)
        left.write_bytes(b"the other run's shard")
        assert main(argv) == 2
        [line] = capsys.readouterr().err.splitlines()
        assert "another run is writing this version" in line and f"pid {owner.pid} " in line
        assert left.read_bytes() == b"the other run's shard"
    assert main(argv) == 0
    assert completed_dataset(str(output)) == str(version)  # verified: nothing left over
    assert len(read_dev(str(version))) == INSTANCES
    assert read_manifest(str(version))["metrics"] == read_manifest(small_dataset[0])["metrics"]


def test_bad_input_is_one_line_naming_it(job, tmp_path, capsys):
    def error(argv):
        assert main(argv) == 2
        [line] = capsys.readouterr().err.splitlines()
        return line

    assert error(["import", "--job", str(tmp_path), "--answers", "x"]) == (
        f"error: {tmp_path / JOB_FILE}: no such file; --job takes the folder dmc-rate export wrote"
    )
    assert error(["import", "--job", str(job), "--answers", str(tmp_path / "none*.json")]) == (
        f"error: --answers {tmp_path / 'none*.json'}: no such file"
    )
    assert error(["export", "--dataset", str(tmp_path), "--output", "o", "--raters", "0"]) == (
        "error: --raters 0: must be at least 1"
    )
    answers = tmp_path / "a.json"
    answers.write_text('{"rater": "r", "answers": []}')
    assert error(["import", "--job", str(job), "--answers", f"{answers},{tmp_path}/*.json"]) == (
        f"error: --answers: {answers} is named twice (again by {tmp_path}/*.json); name each "
        "file once"
    )
    assert error(["rate"]) == (
        "error: unknown command 'rate'; usage: dmc-rate {export,import,filter} [option ...]"
    )
    assert not os.path.exists("o")
    nested = tmp_path / "nested.json"
    nested.write_text('{"rater": ' + "[" * 100_000)
    assert error(["import", "--job", str(job), "--answers", str(nested)]).startswith(
        f"error: {nested}: JSON nested too deeply to read"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    key = json.loads((job / JOB_FILE).read_text())
    for text, message in (
        ("not json", "malformed JSON at line 1, column 1: Expecting value"),
        ("[]", "a JSON array; the answer key dmc-rate export writes is a JSON object"),
        (json.dumps({**key, "items": 3}), "not the answer key dmc-rate export writes (no or "),
        (json.dumps({**key, "items": [{"kind": "rated"}]}), "(no or malformed 'example_id')"),
        (json.dumps({k: v for k, v in key.items() if k != "raters"}), "(no or malformed 'raters')"),
    ):
        (broken / JOB_FILE).write_text(text)
        line = error(["import", "--job", str(broken), "--answers", str(answers)])
        assert line.startswith(f"error: {broken / JOB_FILE}: ") and message in line, line


@pytest.mark.parametrize("option", [1.7, True, "1.0", None])
def test_an_option_that_is_not_an_integer_is_malformed_in_json_as_in_csv(option):
    data = json.dumps(
        {"rater": "r", "answers": [{"example_id": "a", "option": option, "seconds": 3}]}
    )
    answers, malformed = read_answers("a.json", data.encode())
    assert answers == []
    assert malformed == [
        "a.json: row 1: "
        + ("no option" if option is None else f"option {option!r} is not an integer")
    ]


def test_the_job_depends_on_the_seed_only(small_dataset, job, tmp_path, capsys):
    """The same seed writes the same files (the app, crowd.csv, the key); another seed asks
    other instances."""
    version, _ = small_dataset
    argv = ["--instances", str(INSTANCES), "--training", str(TRAINING_ITEMS), "--gold"]
    for seed, folder in (("3", "same"), ("3", "again"), ("4", "other")):
        output = ["export", "--dataset", version, "--output", str(tmp_path / folder)]
        assert main([*output, *argv, str(GOLD_ITEMS), "--seed", seed]) == 0
    capsys.readouterr()
    same, again, other = tmp_path / "same", tmp_path / "again", tmp_path / "other"
    for name in (JOB_FILE, CROWD_FILE):
        assert (same / name).read_bytes() == (job / name).read_bytes()  # --images aside
    for name in (JOB_FILE, CROWD_FILE, f"{APP_DIRECTORY}/{APP_FILE}"):
        assert (same / name).read_bytes() == (again / name).read_bytes()
    assert set(labels(other)) != set(labels(job))


@pytest.mark.parametrize("name", ["export", "import", "filter"])
def test_help_names_the_subcommand_and_promises_no_beam_options(name, capsys):
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    words = " ".join(text.split())
    assert text.startswith(f"usage: dmc-rate {name} --")
    assert f"example: dmc-rate {name} --" in words
    assert "No other flag is taken" in words and "Apache Beam" not in words
    with pytest.raises(SystemExit):
        main(["--help"])
    assert f"{name}: " in capsys.readouterr().out


def test_four_option_instances_are_asked_scored_and_filtered_as_four(
    shared, synthetic_corpus, tmp_path, capsys
):
    """madlibs_easy (k = 4): four options shown, the key 5 does nothing, chance is 25%, and
    the subset is a four-option version (no MCIC text files, which hold five)."""
    options = GenerateOptions(input=synthetic_corpus, output="", decoys="madlibs_easy", **SMALL)
    version = shared.version(options)[0]
    job_folder = tmp_path / "job"
    (tmp_path / "images").mkdir()
    counts = ["--instances", str(INSTANCES), "--training", str(TRAINING_ITEMS)]
    argv = ["export", "--dataset", version, "--output", str(job_folder), "--raters", "1"]
    images = dev_images(version, tmp_path / "images")
    assert main([*argv, *counts, "--gold", str(GOLD_ITEMS), "--images", str(images)]) == 0
    key = labels(job_folder)
    assert {len(item["options"]) for item in key.values()} == {4}
    with open(job_folder / CROWD_FILE, encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert "option_4" in header and "option_5" not in header
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser = Browser()
    try:
        browser.allow_downloads(str(downloads))
        browser.load((job_folder / APP_DIRECTORY / APP_FILE).as_uri())
        browser.click("#rater-id")
        browser.type_text("k4")
        browser.press("Enter")
        for _ in range(TRAINING_ITEMS):
            browser.press("Enter")
        first = card(browser)
        browser.press("5")
        assert card(browser) == first  # no fifth option: nothing answered
        reload_app(browser)
        chosen, _ = rate_questions(browser, key, lambda i, item: True, "key")
        answers = download(browser, "#csv", downloads)
    finally:
        browser.close()
    assert len(chosen) == QUESTIONS
    output = tmp_path / "ratings"
    assert (
        main(
            ["import", "--job", str(job_folder), "--answers", str(answers), "--output", str(output)]
        )
        == 0
    )
    table = json.loads((output / REPORT_FILE).read_text())["table"]
    assert table["chance"] == pytest.approx(0.25)
    assert (table["one_human"]["count"], table["one_human"]["of"]) == (INSTANCES, INSTANCES)
    assert "chance (one over the options, averaged): 25.0%" in capsys.readouterr().out
    subset_root = tmp_path / "subset"
    assert (
        main(["filter", "--ratings", str(output), "--output", str(subset_root), "--min_right", "1"])
        == 0
    )
    subset = completed_dataset(str(subset_root))
    rows = read_dev(subset)
    assert len(rows) == INSTANCES and {len(row["options"]) for row in rows} == {4}
    assert not [path for path in version_files(subset) if path.startswith("mcic/")]
