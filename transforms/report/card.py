"""Dataset cards: ``README.md`` with HuggingFace YAML front matter, per version and per root.

The front matter's ``configs`` name the Parquet shards of each split, so
``datasets.load_dataset(<directory>)`` reads exactly those (never the TFRecord
or text copies, never another version), and its ``dataset_info`` gives the
features and each split's instance count, which ``datasets`` checks on load.
YAML is written by hand: every scalar is JSON-quoted, which YAML reads as is. The
Markdown under it is ``assets/version_card.md`` or ``assets/root_card.md``, a
``string.Template`` whose ``${name}`` fields are filled here.
"""

import json
from string import Template

from schemas.instance import FIELDS, MCIC_OPTIONS
from schemas.layout import PARQUET, relative_shard_pattern
from transforms.corpus.split import SPLITS
from transforms.dataset.statistics import DECOY_MEASURES
from transforms.report import assets
from transforms.strategies.mcic import DING2016
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.metrics import metrics_table

CARD_FILE = "README.md"
# The corpus papers; a strategy's own papers live beside it (``DecoyStrategy.references``),
# and the method's, Ding et al., beside MC-IC.
LIN2014 = """@inproceedings{lin2014coco,
  title = {Microsoft {COCO}: Common Objects in Context},
  author = {Lin, Tsung-Yi and Maire, Michael and Belongie, Serge and Hays, James and
            Perona, Pietro and Ramanan, Deva and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},
  booktitle = {ECCV},
  year = {2014}
}"""
CHEN2015 = """@article{chen2015cococaptions,
  title = {Microsoft {COCO} Captions: Data Collection and Evaluation Server},
  author = {Chen, Xinlei and Fang, Hao and Lin, Tsung-Yi and Vedantam, Ramakrishna and
            Gupta, Saurabh and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},
  journal = {arXiv:1504.00325},
  year = {2015}
}"""
ALWAYS_CITED = (DING2016, LIN2014, CHEN2015)


def _quoted(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def front_matter(data_directory: str, splits: dict[str, dict], license: str) -> str:
    """YAML naming ``<data_directory>/parquet/<split>/*.parquet`` as each split's files.

    >>> print(front_matter("v1", {"dev": {"instances": 3}}, "cc-by-4.0").splitlines()[10])
        path: "v1/parquet/dev/dev-*.parquet"
    """
    prefix = f"{data_directory}/" if data_directory else ""
    lines = [
        "---",
        f"license: {_quoted(license)}",
        "language:",
        "- en",
        "task_categories:",
        "- multiple-choice",
        "configs:",
        '- config_name: "default"',
        "  data_files:",
    ]
    present = [split for split in SPLITS if split in splits]
    for split in present:
        pattern = prefix + relative_shard_pattern(PARQUET, split)
        lines += [f"  - split: {_quoted(split)}", f"    path: {_quoted(pattern)}"]
    lines += ["dataset_info:", "  features:"]
    for field in FIELDS:
        kind = "list" if field.repeated else "dtype"
        lines += [
            f"  - name: {_quoted(field.name)}",
            f"    {kind}: {_quoted(field.kind)}",
        ]
    lines.append("  splits:")
    for split in present:
        # num_bytes is the size of the in-memory table, which only datasets knows; 0 = unknown.
        lines += [
            f"  - name: {_quoted(split)}",
            f"    num_examples: {int(splits[split]['instances'])}",
            "    num_bytes: 0",
        ]
    lines.append("---")
    return "\n".join(lines) + "\n"


def root_card(name: str, dataset_directory: str, splits: dict[str, dict], license: str) -> str:
    """The output root's card: loading the root loads the latest version's dataset only.
    ``dataset_directory``: that version's dataset folder, relative to the root."""
    body = Template(assets.read("root_card.md")).substitute(
        name=name, card=f"{dataset_directory}/{CARD_FILE}"
    )
    return front_matter(dataset_directory, splits, license) + "\n" + body


def _table_one(statistics: dict) -> str:
    """Table 1, with each split's coverage: the share of its captions that are targets."""
    rows = [
        "| split | images | instances | skipped captions | coverage |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for split in SPLITS:
        values = statistics["splits"][split]
        skipped = sum(values["skipped"].values())
        share = values.get("coverage", {}).get("share")
        covered = f"{share:.1%}" if share is not None else ""
        counts = f"{values['images']:,} | {values['instances']:,} | {skipped:,}"
        rows.append(f"| {split} | {counts} | {covered} |")
    total = statistics["total"]
    rows.append(f"| total | {total['images']:,} | {total['instances']:,} | | |")
    return "\n".join(rows)


def _skips(statistics: dict) -> str:
    skipped = [f"- `{reason}`: {count:,}" for reason, count in statistics["skipped"].items()]
    rejected = [
        f"- `{rule}`: {count:,} candidates turned away"
        for rule, count in statistics["validity"].items()
        if count
    ]
    return (
        "\n".join(skipped or ["- none"])
        + "\n\nValidity rules:\n\n"
        + "\n".join(rejected or ["- nothing turned away"])
    )


def _decoy_means(statistics: dict) -> str:
    rows = [
        "| split | decoys | mean simPV | mean simSURF | mean Score |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for split in SPLITS:
        decoys = statistics["splits"][split]["decoys"]
        if not decoys["sim_pv"]["count"]:
            continue
        means = " | ".join(f"{decoys[name]['mean']:.3f}" for name in DECOY_MEASURES)
        rows.append(f"| {split} | {decoys['sim_pv']['count']:,} | {means} |")
    return "\n".join(rows)


def _strategy_report(statistics: dict) -> str:
    """The strategy's own measures (``DecoyStrategy.report``), one line each."""
    lines = [
        f"- {measure.replace('_', ' ')}: {value:,.3f}"
        if isinstance(value, float)
        else f"- {measure.replace('_', ' ')}: {value:,}"
        for section in statistics.get("strategy", {}).values()
        for measure, value in section.items()
    ]
    return "\n".join(lines)


def _audit(statistics: dict) -> str:
    audit = statistics.get("text_only_audit", {})
    if "verdict" not in audit:
        return f"Not run: {audit.get('skipped', 'no audit in the statistics')}."
    left_out = f"\n\nLeft out: {audit['left_out']}." if "left_out" in audit else ""
    return f"```\n{metrics_table(audit)}\n```\n\n**{audit['verdict']['line']}**{left_out}"


def _inputs(manifest: dict) -> str:
    return "\n".join(
        f"- `{entry['path'].rsplit('/', 1)[-1]}`: {entry['bytes']:,} bytes, "
        f"sha256 `{entry['sha256']}`"
        for entry in manifest["inputs"]
    )


def version_card(manifest: dict, statistics: dict, plots: dict[str, str]) -> str:
    """The card of one version, from its manifest (``options``: the content options only) and
    statistics; ``plots``: file name -> caption of the PNGs written beside the card.

    Nothing in it depends on where or when the run was (paths, times), so reruns write the
    same card.
    """
    options = manifest["options"]
    strategy = STRATEGIES[options["decoys"]]
    k = strategy.num_options
    chance = f"{100 / k:.0f}%"
    code = manifest["code"]
    body = Template(assets.read("version_card.md")).substitute(
        strategy=strategy.name,
        k=k,
        decoys=k - 1,
        chance=chance,
        summary=strategy.summary,
        guarantee=strategy.guarantee or "none: text-only models may beat chance (see the audit)",
        text_formats=(
            "and `mcic/<split>/` (the published MCIC-COCO text format)"
            if k == MCIC_OPTIONS
            else f"(the MCIC text format holds five options, so it is not written for {k})"
        ),
        table_one=_table_one(statistics),
        skips=_skips(statistics),
        decoy_means=_decoy_means(statistics),
        strategy_report=_strategy_report(statistics),
        figures="\n\n".join(f"![{caption}]({path})" for path, caption in plots.items()),
        audit=_audit(statistics),
        limitations=strategy.limitations,
        inputs=_inputs(manifest),
        python=code["python"],
        versions=", ".join(f"{package} {version}" for package, version in code["versions"].items()),
        options="\n".join(f"| `--{name}` | `{value}` |" for name, value in sorted(options.items())),
        license=options["captions_license"],
        citations="\n\n".join(
            f"```bibtex\n{entry}\n```" for entry in (*ALWAYS_CITED, *strategy.references)
        ),
    )
    return front_matter("", statistics["splits"], options["captions_license"]) + "\n" + body
