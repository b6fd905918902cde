"""Dataset cards: ``README.md`` with HuggingFace YAML front matter, per version and per root.

The front matter's ``configs`` name the Parquet shards of each split, so
``datasets.load_dataset(<directory>)`` reads exactly those (never the TFRecord
or text copies, never another version), and its ``dataset_info`` gives the
features and each split's instance count, which ``datasets`` checks on load.
The YAML is huggingface_hub's ``DatasetCardData(...).to_yaml()``: the Hub's own model of
card metadata, dumped by PyYAML, which quotes what YAML would misread (a language ``no``). The
Markdown under it is ``assets/version_card.md``, a ``string.Template`` whose ``${name}``
fields are filled here. The root's card is the latest version's card with every path
taken from the root (``at``), under ``assets/root_card.md``'s word on the versions.
"""

import json
import re
from dataclasses import dataclass
from string import Template

from apache_beam.io.filesystems import FileSystems
from huggingface_hub import DatasetCardData

from schemas.instance import FIELDS, MCIC_OPTIONS, OPTION
from schemas.layout import CARD_FILE, PARQUET, relative_shard_pattern
from transforms.corpus.encoders.registry import DEFAULT_MODEL, compared_threshold
from transforms.corpus.languages.registry import ENGLISH
from transforms.corpus.sentences import DEFAULT_THRESHOLD, VALIDITY_MODEL
from transforms.corpus.split import SPLITS
from transforms.dataset.statistics import DECOY_MEASURES
from transforms.files import read_parquet_files
from transforms.report import assets
from transforms.strategies.mcic import DING2016
from transforms.strategies.registry import STRATEGIES
from transforms.strategies.validity import DESCRIBES_RULE
from transforms.trainer.dataset_audit import AT_CHANCE_DEVIATIONS, chance_bound, row_meanings
from transforms.trainer.metrics import metrics_table

# The manifest's Markdown its producer adds at the end of the card (a human filter's word):
# kept there so the root's card, written when the version becomes the latest, has it too.
CARD_SECTION = "card_section"
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
COCO_CITED = (LIN2014, CHEN2015)
# HuggingFace's size_categories, by their upper bound on the number of instances.
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)


def plural(noun: str, count: int) -> str:
    """
    >>> plural("decoy", 4), plural("decoy", 1)
    ('decoys', 'decoy')
    """
    return noun if count == 1 else f"{noun}s"


def size_category(instances: int) -> str:
    """
    >>> size_category(999), size_category(1_000), size_category(3_000_000_000)
    ('n<1K', '1K<n<10K', 'n>100M')
    """
    return next((name for bound, name in SIZE_CATEGORIES if instances < bound), "n>100M")


def split_bytes(dataset_directory: str) -> dict[str, int]:
    """Bytes of each split's Parquet files in a dataset folder: the card's ``num_bytes``."""
    sizes = {}
    for split in SPLITS:
        pattern = FileSystems.join(dataset_directory, relative_shard_pattern(PARQUET, split))
        sizes[split] = sum(
            meta.size_in_bytes for meta in FileSystems.match([pattern])[0].metadata_list
        )
    return sizes


def first_instance(dataset_directory: str, split: str = "dev") -> dict | None:
    """The first row of a split's first Parquet shard (the card's example); None if empty."""
    pattern = FileSystems.join(dataset_directory, relative_shard_pattern(PARQUET, split))
    for table in read_parquet_files(pattern, list(EXAMPLE_FIELDS)):
        if table.num_rows:
            return table.slice(0, 1).to_pylist()[0]
    return None


COCO_SUFFIXES = (".json", ".json.gz")  # COCO captions files


@dataclass(frozen=True)
class Corpus:
    """What the card says of the input captions: licence, tags and the papers to cite."""

    license: str  # a HuggingFace licence id
    tag: str
    licence: str  # the card's Licence section
    citations: tuple[str, ...]


SYNTHETIC = "synthetic"  # the tag of the project's own corpus


def corpus(manifest: dict) -> Corpus:
    """The project's synthetic corpus (every input marked so: ``pipelines.store.manifest``) is the
    project's own text, neither COCO's nor under ``--captions_license``. English captions in
    COCO json files are taken to be COCO's (its licence and papers); any other input (Flickr
    token files, caption lines, another language's captions of COCO's images) is a corpus
    the run cannot name, under ``--captions_license``, its papers the user's to add."""
    inputs = [entry for entry in manifest["inputs"] if "synthetic" in entry]
    if inputs and all(entry["synthetic"] for entry in inputs):
        return Corpus(
            license="other",
            tag=SYNTHETIC,
            licence=(
                "The captions are the project's own synthetic corpus (`dmc-make-corpus`: text "
                "generated from latent scenes, not COCO's captions), so no corpus licence "
                "applies and `--captions_license` is not used; the images do not exist "
                "(`image_file` names are placeholders)."
            ),
            citations=(),
        )
    license = manifest["options"]["captions_license"]
    english = manifest.get("language", {}).get("code", "en") == "en"
    if english and all(entry["path"].endswith(COCO_SUFFIXES) for entry in inputs):
        return Corpus(
            license=license,
            tag="coco",
            licence=(
                f"The captions are the input corpus's, under its licence: `{license}` (COCO's "
                "captions: CC BY 4.0). Images are not part of this dataset; COCO's images carry "
                "their own Flickr licences."
            ),
            citations=COCO_CITED,
        )
    return Corpus(
        license=license,
        tag="image-captions",
        licence=(
            f"The captions are the input corpus's, under its licence: `{license}` "
            "(`--captions_license`). Images are not part of this dataset and carry their own "
            "licences. Cite the corpus's own papers beside those below."
        ),
        citations=(),
    )


def cited(manifest: dict) -> tuple[str, ...]:
    """What a version asks its users to cite, once each: the method (Ding et al.), the
    corpus's papers, the strategy's own (MC-IC's is the method's)."""
    strategy = STRATEGIES[manifest["options"]["decoys"]]
    return tuple(dict.fromkeys((DING2016, *corpus(manifest).citations, *strategy.references)))


def front_matter(
    at: str,
    statistics: dict,
    corpus: Corpus,
    strategy: str,
    sizes: dict[str, int],
    language: str,
) -> str:
    """YAML naming ``<at>parquet/<split>/*.parquet`` as each split's files; ``sizes``: each
    split's bytes (:func:`split_bytes`). Made by huggingface_hub's ``DatasetCardData``, the
    card metadata the Hub reads back, whose YAML (PyYAML's) quotes what must be quoted."""
    splits = statistics["splits"]
    present = [split for split in SPLITS if split in splits]
    data = DatasetCardData(
        pretty_name=f"Multiple-choice image captions: {strategy} decoys",
        license=corpus.license,
        language=[language],
        task_categories=["multiple-choice"],
        size_categories=[size_category(statistics["total"]["instances"])],
        tags=["image-captioning", corpus.tag, strategy],
        configs=[
            {
                "config_name": "default",
                "data_files": [
                    {"split": split, "path": at + relative_shard_pattern(PARQUET, split)}
                    for split in present
                ],
            }
        ],
        dataset_info={
            "features": [
                {"name": field.name, "list" if field.repeated else "dtype": field.kind}
                for field in FIELDS
            ],
            "splits": [
                {
                    "name": split,
                    "num_examples": int(splits[split]["instances"]),
                    "num_bytes": sizes[split],
                }
                for split in present
            ],
        },
    )
    return f"---\n{data.to_yaml()}\n---\n"


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


def _skips(statistics: dict, manifest: dict) -> str:
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
        + _encoder_rule(statistics, manifest)
    )


def _validity_model(manifest: dict) -> dict | None:
    """The validity model's entry among the version's inputs; None with --validity_model none."""
    return next((entry for entry in manifest["inputs"] if VALIDITY_MODEL in entry), None)


def _encoder_rule(statistics: dict, manifest: dict) -> str:
    """The sentence on the rule that no decoy describes the target's image: which encoder,
    which weights, which threshold, how many it turned away; none when the run had none."""
    model = _validity_model(manifest)
    if model is None:
        return ""
    count = statistics["validity"].get(f"validity/{DESCRIBES_RULE}", 0)
    threshold, family = manifest["options"]["validity_threshold"], model[VALIDITY_MODEL]["family"]
    compared = compared_threshold(threshold, family)
    margin = (
        f" Its {family} cosines are compared at {compared}, so that each decoy's float32 "
        f"cosine stays below {threshold} as well."
        if compared != threshold
        else ""
    )
    return (
        f"\n\n`{DESCRIBES_RULE}`: a candidate whose sentence-encoder cosine to any caption of "
        f"the target's image reaches {threshold} describes that "
        f"image too, and is no decoy ({count:,} turned away). Encoder: `{model['path']}` "
        f"({family}), weights sha256 `{model['sha256']}`, reading "
        f"each caption as written (`option_originals`).{margin}"
    )


def _validity_limits(manifest: dict) -> str:
    """What the run's validity rules leave: rewordings, unless a sentence encoder looked,
    and even then the ones it misses."""
    surface = (
        "The validity rules remove decoys that copy, or are surface-close to, any caption of "
        "the image"
    )
    if _validity_model(manifest) is None:
        return f"{surface}, not decoys that describe it in other words (`--validity_model none`)."
    return (
        f"{surface}, and decoys the sentence encoder puts at cosine "
        f"{manifest['options']['validity_threshold']} or more to one of them "
        f"(`{DESCRIBES_RULE}`). The encoder misses some rewordings and turns away some decoys "
        f"that do not describe the image: on Flickr8k's expert judgments, {DEFAULT_MODEL} at "
        f"{DEFAULT_THRESHOLD} (the defaults) keeps about one in nine pairs judged to describe "
        "the image and turns away about one in twelve of the others."
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
    meanings = row_meanings()
    rows = "\n".join(
        f"- {row['model']}: {meanings[row['model']]}."
        for row in audit["models"]
        if row["model"] in meanings
    )
    return f"```\n{metrics_table(audit)}\n```\n\n{rows}\n\n**{audit['verdict']['line']}**{left_out}"


def _pools(statistics: dict, pool: str) -> str:
    """Why the splits' decoys differ in closeness: the size of the pool each is drawn from."""
    splits = statistics["splits"]
    if not all(splits[s]["decoys"]["sim_pv"]["count"] and "coverage" in splits[s] for s in SPLITS):
        return ""  # edited decoys have no simPV; without coverage, no caption counts
    means = ", ".join(f"{s} {splits[s]['decoys']['sim_pv']['mean']:.3f}" for s in SPLITS)
    if pool == "split":
        sizes = ", ".join(f"{s} {splits[s]['coverage']['captions']:,}" for s in SPLITS)
        return (
            f"Each split's decoys are drawn from its own captions (`--decoy_pool split`): {sizes}. "
            "The more captions a pool holds, the closer a target's nearest neighbours are, so "
            f"a larger split's decoys are closer to their targets (mean simPV: {means})."
        )
    total = sum(splits[s]["coverage"]["captions"] for s in SPLITS)
    return (
        f"Every split's decoys are drawn from the whole corpus (`--decoy_pool {pool}`, "
        f"{total:,} captions), so the splits' decoys are equally close to their targets but "
        f"for chance (mean simPV: {means})."
    )


def _chance_rule(statistics: dict, k: int) -> str:
    """The audit verdict's rule, with the band it gives on this version's instances."""
    rule = (
        f"An accuracy within {AT_CHANCE_DEVIATIONS:g} binomial standard deviations of chance "
        f"(1/{k} = {100 / k:.1f}%) reads as chance"
    )
    verdict = statistics.get("text_only_audit", {}).get("verdict")
    if verdict is None:
        return rule + "."
    bound = chance_bound(1 / k, verdict["total"])
    low, high = max(0.0, 1 / k - bound), min(1.0, 1 / k + bound)
    return (
        f"{rule}: on {verdict['split']}'s {verdict['total']:,} instances, {100 * low:.1f}% to "
        f"{100 * high:.1f}%. Further off, above or below, the options give the target away."
    )


# "<" where it would open an HTML tag: outside code spans, Markdown renderers drop
# <version> or <unk> as an unknown tag, so placeholders are written as entities there.
TAG_OPENING = re.compile(r"<(?=[A-Za-z_/!?])")
CODE_SPAN = re.compile(r"(`+[^`]*`+)")


def markdown_escaped(text: str) -> str:
    """``text`` for a Markdown page or card: a placeholder such as <version> outside code
    spans shows as written instead of vanishing.

    >>> markdown_escaped("OUTPUT/versions/<version> or `<kept>`")
    'OUTPUT/versions/&lt;version> or `<kept>`'
    """
    parts = CODE_SPAN.split(text)
    return "".join(part if k % 2 else TAG_OPENING.sub("&lt;", part) for k, part in enumerate(parts))


def fields_table(k: int | None = None) -> str:
    """The instance schema (``schemas.instance.FIELDS``) with a version's k, or with k
    itself (None: the manual's table)."""
    rows = ["| field | type | meaning |", "| --- | --- | --- |"]
    for field in FIELDS:
        kind = f"`{field.kind}`"
        if field.repeated:
            length = field.length(k) if k else ("k" if field.per == OPTION else "k - 1")
            kind = f"`list<{field.kind}>` ({length})"
        rows.append(f"| `{field.name}` | {kind} | {markdown_escaped(field.doc)} |")
    return "\n".join(rows)


# what the card's example shows of an instance: enough to see what a row holds
EXAMPLE_FIELDS = ("example_id", "split", "image_file", "options", "label", "option_edits")


def _example(instance: dict | None) -> str:
    """An instance, as pandas or ``datasets`` gives its row (some fields), or nothing."""
    if instance is None:
        return ""
    shown = {name: instance[name] for name in EXAMPLE_FIELDS}
    return (
        "An instance (some of its fields):\n\n```json\n"
        + json.dumps(shown, indent=2, ensure_ascii=False)
        + "\n```"
    )


def _code(code: dict) -> str:
    commit = code.get("git_commit")
    return f"git commit `{commit}`" if commit else "no git commit (not run from a checkout)"


def _inputs(manifest: dict) -> str:
    return "\n".join(
        f"- `{entry['path'].rsplit('/', 1)[-1]}`: {entry['bytes']:,} bytes, "
        f"sha256 `{entry['sha256']}`"
        + (" (the synthetic corpus)" if entry.get("synthetic") else "")
        for entry in manifest["inputs"]
    )


def caption_language(manifest: dict) -> dict:
    """The manifest's record of the captions' language; English (the paper's rule) is
    recorded by nothing, as before the option existed."""
    return manifest.get("language", {"code": ENGLISH.code, "tokeniser": ENGLISH.tokeniser})


def _language(language: dict) -> str:
    """The card's sentence on the captions' language, after the decoys' (none for English,
    whose card reads as it did before --language)."""
    if language["code"] == ENGLISH.code:
        return ""
    packages = ", ".join(f"{name} {version}" for name, version in language["packages"].items())
    return (
        f"\n\nCaptions: {language['name']} (`{language['code']}`), tokenised by "
        f"`{language['tokeniser']}`" + (f" ({packages})" if packages else "") + ": an option's "
        "text is its words separated by single spaces (the rule: the project's "
        "docs/languages.md)."
    )


def _card(
    manifest: dict,
    statistics: dict,
    plots: dict[str, str],
    sizes: dict[str, int],
    at: str,
    example: dict | None,
) -> tuple[str, str]:
    """(front matter, Markdown) of a version's card, its paths relative to ``at``."""
    options = manifest["options"]
    strategy = STRATEGIES[options["decoys"]]
    pool = strategy.pool(options["decoy_pool"])
    k = strategy.num_options
    code = manifest["code"]
    source = corpus(manifest)
    language = caption_language(manifest)
    body = Template(assets.read("version_card.md")).substitute(
        version=manifest["version"],
        at=at,
        strategy=strategy.name,
        k=k,
        decoys=k - 1,
        decoy_noun=plural("decoy", k - 1),
        chance=f"{100 / k:.0f}%",
        summary=strategy.summary,
        guarantee=strategy.guarantee or "none: text-only models may beat chance (see the audit)",
        language=_language(language),
        text_formats=(
            f"and `{at}mcic/<split>/` (the published MCIC-COCO text format)"
            if k == MCIC_OPTIONS
            else f"(the MCIC text format holds five options, so it is not written for {k})"
        ),
        fields=fields_table(k),
        example=_example(example),
        table_one=_table_one(statistics),
        skips=_skips(statistics, manifest),
        decoy_means=_decoy_means(statistics),
        pools=_pools(statistics, pool),
        strategy_report=_strategy_report(statistics),
        figures="\n\n".join(f"![{caption}]({at}{path})" for path, caption in plots.items()),
        chance_rule=_chance_rule(statistics, k),
        audit=_audit(statistics),
        limitations=strategy.limitations,
        validity_limits=_validity_limits(manifest),
        inputs=_inputs(manifest),
        code=_code(code),
        python=code["python"],
        versions=", ".join(f"{package} {version}" for package, version in code["versions"].items()),
        options="\n".join(
            f"| `--{name}` | `{pool if name == 'decoy_pool' else value}` |"
            for name, value in sorted(options.items())
        ),
        licence=source.licence,
        citations="\n\n".join(f"```bibtex\n{entry}\n```" for entry in cited(manifest)),
    )
    front = front_matter(at, statistics, source, strategy.name, sizes, language["code"])
    return front, body + manifest.get(CARD_SECTION, "")


def version_card(
    manifest: dict,
    statistics: dict,
    plots: dict[str, str],
    sizes: dict[str, int],
    example: dict | None = None,
) -> str:
    """The card of one version, from its manifest (``options``: the content options only) and
    statistics; ``plots``: file name -> caption of the PNGs written beside the card;
    ``sizes``: each split's Parquet bytes (:func:`split_bytes`); ``example``: an instance
    to show (:data:`EXAMPLE_FIELDS` of it).

    Nothing in it depends on where or when the run was (paths, times), so reruns write the
    same card.
    """
    front, body = _card(manifest, statistics, plots, sizes, at="", example=example)
    return f"{front}\n{body}"


# The root card's first line after its front matter: what tells a README.md this tool wrote
# (and may replace) from a user's own, which is moved aside instead (invisible when rendered).
ROOT_CARD_MARKER = "<!-- dmc-generate's root card: rewritten whenever latest moves -->"


def root_card(
    manifest: dict,
    statistics: dict,
    plots: dict[str, str],
    sizes: dict[str, int],
    at: str,
    example: dict | None = None,
) -> str:
    """The output root's card: the latest version's full card with every path taken from the
    root, so its snippets run there and loading the root loads that version only. ``at``:
    the version's dataset folder, relative to the root."""
    front, body = _card(manifest, statistics, plots, sizes, at=f"{at}/", example=example)
    title, rest = body.split("\n\n", 1)
    preamble = Template(assets.read("root_card.md")).substitute(
        name=manifest["version"], card=f"{at}/{CARD_FILE}"
    )
    return f"{front}\n{ROOT_CARD_MARKER}\n{title}\n\n{preamble}{rest}"
