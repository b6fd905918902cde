"""Human ratings of a dataset: reading answer files, checking them, the paper's Table 2.

Pure functions. ``pipelines/rate.py`` reads and writes the files. Ding et al. 2016
(section 3.4, Table 2) had three raters answer each of 1,000 dev instances and report
the share of correct responses (1-human), the share of instances the majority of the
raters got right (3-human) and how many raters got each instance right (3/3 .. 0/3);
Visual Madlibs (Yu et al. 2015) keeps the questions at least three of five raters
answered correctly. Nothing assumes five options: an instance has
``len(options)`` of them and chance is one over that.

An answer names the chosen option by its index in the instance's ``options`` (the
order of the dataset, not the shuffled order a rater saw), so it cannot be ambiguous.
"""

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from transforms.errors import InputError
from transforms.files import parse_json
from transforms.trainer.metrics import binomial_std

RATED, GOLD, TRAINING = "rated", "gold", "training"
# The columns of an answers CSV: the app's own names, then those of a crowd platform's
# batch results (Amazon Mechanical Turk's: Input.* echo the uploaded row, Answer.* the form).
COLUMNS = {
    "rater": ("rater", "WorkerId"),
    "example_id": ("example_id", "Input.example_id"),
    "option": ("option", "Answer.option"),
    "seconds": ("seconds", "WorkTimeInSeconds"),
}
OPTIONAL_COLUMNS = {"option_text": ("option_text", "Answer.option_text")}
# Why an answer is not counted: each is reported with its count and examples.
MALFORMED = "malformed"
UNKNOWN_INSTANCE = "unknown_instance"
TRAINING_ITEM = "training_item"
INVALID_OPTION = "invalid_option"
TEXT_MISMATCH = "option_text_mismatch"
DUPLICATE = "duplicate"
TOO_FAST = "too_fast"


@dataclass(frozen=True)
class Item:
    """One question of a rating job, as its key holds it: ``kind`` is RATED, GOLD or TRAINING."""

    example_id: str
    kind: str
    options: tuple[str, ...]
    label: int


@dataclass(frozen=True)
class Answer:
    rater: str
    example_id: str
    option: int  # index into the instance's options, as the dataset orders them
    seconds: float
    where: str  # "<file>: row N", for reports
    option_text: str | None = None


@dataclass
class Checked:
    """What the import keeps and what it turned away, every answer accounted for."""

    answers: list[Answer] = field(default_factory=list)  # counted: rated and gold
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    too_fast: list[Answer] = field(default_factory=list)  # flagged; counted unless dropped

    def skip(self, reason: str, what: str) -> None:
        self.skipped[reason].append(what)


def _column(header: list[str], names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in header), None)


def read_answers(name: str, data: bytes, job: str | None = None) -> tuple[list[Answer], list[str]]:
    """(answers, malformed rows) of one answers file: the app's JSON or CSV, or a crowd
    platform's results CSV. ``name`` names the file in messages; a JSON file naming a job
    other than ``job`` is refused (its instances may overlap this job's).

    >>> text = b"rater,example_id,option,seconds\\nr1,1_0,2,3.5\\nr1,1_1,x,1\\n"
    >>> answers, bad = read_answers("a.csv", text)
    >>> answers[0].option, answers[0].seconds, bad
    (2, 3.5, ["a.csv: row 3: option 'x' is not an integer"])
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{name}: not UTF-8 ({error}); answers files are UTF-8") from error
    if text.lstrip().startswith(("{", "[")):
        document = parse_json(name, text, dict, "an answers file of the rating app")
        try:
            rater = document["rater"]
            rows = [{"rater": rater, **row} for row in document["answers"]]
        except (KeyError, TypeError) as error:
            raise InputError(
                f"{name}: not an answers file the rating app exports ({error}); expected "
                '{"rater": ..., "answers": [{"example_id", "option", "seconds"}, ...]}'
            ) from error
        if job is not None and document.get("job", job) != job:
            raise InputError(
                f"{name}: answers of job {document['job']}, not of {job}; import each job's "
                "answers with its own --job"
            )
        first_row = 1
    else:
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
        columns = {key: _column(header, names) for key, names in COLUMNS.items()}
        missing = [key for key, column in columns.items() if column is None]
        if missing:
            raise InputError(
                f"{name}: no column {', '.join(missing)} (crowd results: "
                f"{', '.join(COLUMNS[key][1] for key in missing)}); the header is "
                f"{','.join(header)}"
            )
        columns.update({key: _column(header, names) for key, names in OPTIONAL_COLUMNS.items()})
        rows = [{key: row[column] for key, column in columns.items() if column} for row in reader]
        first_row = 2  # the header is row 1
    answers, malformed = [], []
    for number, row in enumerate(rows, first_row):
        where = f"{name}: row {number}"
        try:
            answers.append(parse_answer(row, where))
        except ValueError as error:
            malformed.append(f"{where}: {error}")
    return answers, malformed


def parse_answer(row: dict, where: str) -> Answer:
    """One row's answer; a ValueError says what is wrong with it."""
    for key in COLUMNS:
        if row.get(key) in (None, ""):
            raise ValueError(f"no {key}")
    option = row["option"]
    try:
        # JSON's 1.7 or true would pass int(); the CSV's "1.7" does not, nor do they here
        if isinstance(option, bool) or not isinstance(option, int | str):
            raise TypeError
        option = int(option)
    except (TypeError, ValueError):
        raise ValueError(f"option {row['option']!r} is not an integer") from None
    try:
        seconds = float(row["seconds"])
    except (TypeError, ValueError):
        raise ValueError(f"seconds {row['seconds']!r} is not a number") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds {row['seconds']!r} is not a duration")
    text = row.get("option_text")
    return Answer(str(row["rater"]), str(row["example_id"]), option, seconds, where, text or None)


def check_answers(
    answers: Iterable[Answer], items: dict[str, Item], *, min_seconds: float, drop_too_fast: bool
) -> Checked:
    """Keeps each rater's first answer to each rated or gold item; reports the rest by reason.

    An answer faster than ``min_seconds`` is flagged, and dropped too with ``drop_too_fast``.
    """
    checked = Checked()
    seen: set[tuple[str, str]] = set()
    for answer in answers:
        item = items.get(answer.example_id)
        described = f"{answer.where}: rater {answer.rater}, {answer.example_id}"
        if item is None:
            checked.skip(UNKNOWN_INSTANCE, f"{described}: not an item of this job")
        elif item.kind == TRAINING:
            checked.skip(TRAINING_ITEM, f"{described}: a training item (the target was shown)")
        elif not 0 <= answer.option < len(item.options):
            checked.skip(
                INVALID_OPTION,
                f"{described}: option {answer.option}, the item has {len(item.options)}",
            )
        elif answer.option_text is not None and answer.option_text != item.options[answer.option]:
            checked.skip(
                TEXT_MISMATCH,
                f"{described}: option {answer.option} is {item.options[answer.option]!r}, the "
                f"answer says {answer.option_text!r}",
            )
        elif (answer.rater, answer.example_id) in seen:
            checked.skip(DUPLICATE, f"{described}: the rater answered it before")
        else:
            seen.add((answer.rater, answer.example_id))
            if answer.seconds < min_seconds:
                checked.too_fast.append(answer)
                if drop_too_fast:
                    continue
            checked.answers.append(answer)
    return checked


def gold_scores(answers: Iterable[Answer], items: dict[str, Item]) -> dict[str, tuple[int, int]]:
    """rater -> (gold items right, gold items answered).

    >>> items = {"g": Item("g", GOLD, ("a", "b"), 1)}
    >>> gold_scores([Answer("r", "g", 0, 1.0, ""), Answer("s", "g", 1, 1.0, "")], items)
    {'r': (0, 1), 's': (1, 1)}
    """
    scores: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for answer in answers:
        item = items[answer.example_id]
        if item.kind == GOLD:
            scores[answer.rater][0] += answer.option == item.label
            scores[answer.rater][1] += 1
    return {rater: (right, total) for rater, (right, total) in sorted(scores.items())}


def failed_gold(scores: dict[str, tuple[int, int]], pass_mark: float) -> list[str]:
    """Raters whose share of gold items right is below ``pass_mark``."""
    return [rater for rater, (right, total) in scores.items() if right < pass_mark * total]


def instance_results(answers: Iterable[Answer], items: dict[str, Item]) -> list[dict]:
    """Per rated item (all of them, answered or not), in example id order: how many raters
    answered, how many right, what each chose.

    >>> items = {"a": Item("a", RATED, ("x", "y", "z"), 2), "b": Item("b", RATED, ("x", "y"), 0)}
    >>> [(r["example_id"], r["answers"], r["right"]) for r in instance_results(
    ...     [Answer("r1", "a", 2, 1.0, ""), Answer("r2", "a", 0, 1.0, "")], items)]
    [('a', 2, 1), ('b', 0, 0)]
    """
    chosen: dict[str, list[Answer]] = defaultdict(list)
    for answer in answers:
        chosen[answer.example_id].append(answer)
    results = []
    for example_id in sorted(items):
        item = items[example_id]
        if item.kind != RATED:
            continue
        given = sorted(chosen[example_id], key=lambda answer: answer.rater)
        results.append(
            {
                "example_id": example_id,
                "num_options": len(item.options),
                "label": item.label,
                "answers": len(given),
                "right": sum(answer.option == item.label for answer in given),
                "raters": [answer.rater for answer in given],
                "chosen": [answer.option for answer in given],
                "seconds": [answer.seconds for answer in given],
            }
        )
    return results


def majority(raters: int) -> int:
    """Right answers an instance needs for the n-human system: at least half (2 of 3).

    >>> [majority(r) for r in (1, 2, 3, 4, 5)]
    [1, 1, 2, 2, 3]
    """
    return math.ceil(raters / 2)


def share(successes: int, trials: int) -> dict:
    return {
        "count": successes,
        "of": trials,
        "share": successes / trials if trials else 0.0,
        "std": binomial_std(successes, trials),
    }


def table_two(results: list[dict], raters: int) -> dict:
    """The paper's Table 2 over the instances answered by exactly ``raters`` raters.

    ``one_human``: correct responses among theirs; ``n_human``: instances a majority got
    right; ``agreement[j]``: instances exactly j raters got right and at least j did, each
    with a binomial standard deviation. Instances with fewer or more answers are counted
    apart, never mixed in; ``chance``: the mean of one over the options.
    """
    complete = [result for result in results if result["answers"] == raters]
    counts = Counter(result["right"] for result in complete)
    responses = sum(result["answers"] for result in complete)
    return {
        "raters": raters,
        "instances": len(complete),
        "incomplete": sum(result["answers"] < raters for result in results),
        "over_rated": sum(result["answers"] > raters for result in results),
        "one_human": share(sum(result["right"] for result in complete), responses),
        "n_human": share(
            sum(counts[j] for j in range(majority(raters), raters + 1)), len(complete)
        ),
        "agreement": {
            j: {
                "exactly": share(counts[j], len(complete)),
                "at_least": share(sum(counts[i] for i in range(j, raters + 1)), len(complete)),
            }
            for j in range(raters, -1, -1)
        },
        "chance": sum(1 / result["num_options"] for result in complete) / len(complete)
        if complete
        else 0.0,
    }


def _percent(value: dict) -> str:
    return f"{100 * value['share']:5.1f}% ± {100 * value['std']:.1f}"


def table_text(table: dict, title: str) -> str:
    """Table 2 as printed: accuracies in % ± one binomial standard deviation."""
    raters, n = table["raters"], table["instances"]
    lines = [
        title,
        f"{n:,} instances answered by {raters} raters each"
        + (
            f"; left out of the table: {table['incomplete']:,} with fewer answers, "
            f"{table['over_rated']:,} with more"
            if table["incomplete"] or table["over_rated"]
            else ""
        ),
        "",
        f"{'system':<34}{'right':>15}  {'accuracy':>14}",
    ]
    for name, value in (
        ("1-human (correct responses)", table["one_human"]),
        (f"{raters}-human (>= {majority(raters)} of {raters} right)", table["n_human"]),
    ):
        right = f"{value['count']:,} / {value['of']:,}"
        lines.append(f"{name:<34}{right:>15}  {_percent(value):>14}")
    lines += ["", f"{'raters right':<14}{'instances':>10}  {'exactly':>14}  {'at least':>14}"]
    for j, row in table["agreement"].items():
        lines.append(
            f"{f'{j}/{raters}':<14}{row['exactly']['count']:>10,}  "
            f"{_percent(row['exactly']):>14}  {_percent(row['at_least']):>14}"
        )
    lines.append(f"\nchance (one over the options, averaged): {100 * table['chance']:.1f}%")
    return "\n".join(lines)


def kept_instances(results: list[dict], raters: int, min_right: int) -> list[str]:
    """The instances answered by ``raters`` raters of whom at least ``min_right`` were right
    (Visual Madlibs: 3 of 5; ``min_right`` 1 drops only those no rater got right)."""
    return [
        result["example_id"]
        for result in results
        if result["answers"] == raters and result["right"] >= min_right
    ]


def filter_card_section(human_filter: dict) -> str:
    """What the card of a human-filtered subset adds: where its rated split comes from."""
    rule = f"at least {human_filter['min_right']} of {human_filter['raters']} raters right"
    return f"""
## Human filter

This version is a subset of version `{human_filter["source"]}`: its
`{human_filter["split"]}` split holds the {human_filter["kept"]:,} instances the raters
answered with {rule}, of the {human_filter["fully_rated"]:,} instances every rater answered
(rating job `{human_filter["job"]}`; {human_filter["split_instances"]:,} instances in the
source's split). The other splits are the source's. The ratings and their checksums are
named in `manifest.json` (`human_filter`); the statistics, plots and audit above describe
this subset.
"""
