"""One version lifecycle: every producer of a version (generate, dmc-rate filter) writes it here.

:func:`write_version` claims the version (:mod:`pipelines.store.claims`), clears what a
failed run left in it, lets the producer write its records (a Beam run, or a rated
subset), then computes its statistics, audits it with text-only models, writes its
card, checks its files against the records the producer says it wrote, writes the
manifest and publishes it (:mod:`pipelines.store.versions`). A producer is one callback,
so a new one cannot skip the claim or a check, and counts are passed, never faked.
It lives apart from :mod:`pipelines.store.versions`, which every reader of a version
imports, because it loads the trainer and matplotlib.
"""

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from apache_beam.io.filesystems import FileSystems

from pipelines.options import GenerateOptions
from pipelines.store.claims import Fence, claimed
from pipelines.store.metadata import write_metadata
from pipelines.store.versions import (
    Version,
    checked_inventory,
    clear_incomplete,
    content_options,
    inventory,
    is_complete,
    publish,
    read_manifest,
)
from schemas.layout import DATASET, MANIFEST_FILE, STATISTICS_FILE, VERSIONS_DIRECTORY, dataset_path
from schemas.options import Group
from transforms.dataset.statistics import (
    compute_statistics,
    read_written,
    small_train,
    unaccounted,
)
from transforms.errors import NotPublished, input_error_message
from transforms.files import read_json, remove_empty_folder, write_file, write_json
from transforms.progress import Elapsed, timed
from transforms.report.card import (
    CARD_FILE,
    CARD_SECTION,
    SYNTHETIC,
    corpus,
    first_instance,
    root_card,
    split_bytes,
    version_card,
)
from transforms.report.plots import dataset_plot_captions, dataset_plots
from transforms.trainer.dataset_audit import WARN, AuditConfig, audit_dataset, held_back

# the manifest's timings of the driver's own steps: driver/<step>_ms, as the stages' counters
DRIVER = "driver"


@dataclass(frozen=True)
class Produced:
    """What a producer wrote into its claimed, empty version, for the writer to describe.

    ``records``: records written per shard name (``train``, ``skipped``, ...), which the
    shards must hold; ``counters``: the counters of the run that wrote them (the
    manifest's ``metrics``; validity rejections enter the statistics from them);
    ``manifest``: what the manifest says of the run (options, inputs, ...), to which the
    writer adds the version, time, statistics, metrics and files; ``statistics``:
    sections the producer adds (a strategy's report); ``card``: Markdown appended to the
    card (kept in the manifest, so the root's card has it too); ``marker``: fields added to
    the completion marker; ``every_caption``: every
    corpus caption must be a target or skipped (a whole run; a subset drops some);
    ``audit_gate``: whether an audit off chance keeps the version from being the latest;
    ``timings``: the producer's own steps outside the pipeline (:func:`driver_metrics`),
    which the manifest keeps apart from the counters.
    """

    records: dict[str, int]
    counters: dict[str, int]
    manifest: dict
    audit: AuditConfig
    statistics: dict = field(default_factory=dict)
    card: str = ""
    marker: dict = field(default_factory=dict)
    every_caption: bool = True
    audit_gate: str = WARN
    timings: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Published:
    version: Version  # complete
    statistics: dict


def write_version(
    output: str, version: Version, produce: Callable[[str, Fence], Produced]
) -> Published | None:
    """Writes ``version`` under ``output`` with ``produce(directory, fence)`` and publishes
    it; None when another run completed it while this one waited to claim it.

    Another run holding the claim stops this one with an InputError, before
    anything in the version is cleared or written. Every step that deletes or
    publishes first checks the ``fence``: a run whose claim was taken over while it
    was paused stops there and deletes and publishes nothing. A run
    refused for bad input (another InputError) leaves nothing behind: neither its
    files nor an empty folder. A run that failed otherwise (a bug, a crash, Ctrl-C)
    keeps the files it wrote, for a look and for the next run to clear, but leaves no
    empty folder either, nor an ``output`` it made.
    """
    output_existed = FileSystems.exists(output)
    try:
        with claimed(version.directory) as owner:
            fence = Fence(version.directory, owner.run)
            if is_complete(version.directory):
                return None
            clear_incomplete(version, fence)
            try:
                produced = produce(version.directory, fence)
            except Exception as error:
                # An InputError, raised here or by a worker process (as its text). The
                # fence comes first: a run whose claim was lost clears nothing.
                if input_error_message(error) is not None:
                    clear_incomplete(
                        version, fence, "this run, refused for bad input", logging.INFO
                    )
                raise
            return finish(output, version, produced, fence)
    except BaseException:
        # the claim is released by now (or another run's: then the folder is not empty);
        # OUTPUT/versions goes too if this was its only version, and OUTPUT if this run made it
        remove_empty_folder(version.directory)
        remove_empty_folder(FileSystems.split(version.directory)[0])
        if not output_existed:
            remove_empty_folder(output)
        raise


def finish(output: str, version: Version, produced: Produced, fence: Fence) -> Published:
    """Statistics, audit, card, checked inventory, manifest, then the marker: in that order.
    A version its audit gate holds back is complete, but ``latest`` is left alone and
    NotPublished raised."""
    directory = version.directory
    steps: dict[str, Elapsed] = {}
    with timed(DRIVER, "statistics") as steps["statistics"]:
        statistics = compute_statistics(*read_written(directory), produced.counters)
    small = small_train(statistics)
    if small:
        logging.warning("%s", small)
    missing = unaccounted(statistics)
    if produced.every_caption and missing:
        # never published: a dataset that silently lost captions is worse than none
        raise RuntimeError(
            f"{directory}: {missing} captions are neither the target of an instance nor "
            "skipped; the version is left incomplete (a bug: see docs/troubleshooting.md)"
        )
    with timed(DRIVER, "audit") as steps["audit"]:
        audit = audit_dataset(directory, produced.audit)
    statistics = {**statistics, **produced.statistics, "text_only_audit": audit}
    fence()
    write_json(dataset_path(directory, STATISTICS_FILE), statistics)
    manifest = {
        **produced.manifest,
        "version": version.name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "statistics": {"splits": statistics["splits"], "skipped": statistics["skipped"]},
        "metrics": produced.counters,
        **({CARD_SECTION: produced.card} if produced.card else {}),
    }
    with timed(DRIVER, "card_and_inventory") as steps["card_and_inventory"]:
        write_card(directory, manifest, statistics)
        written = inventory(directory)  # each file read once: the metadata lists the shards too
        rewritten = write_metadata(directory, version.name, manifest, written)
        unchanged = [entry for entry in written if entry["path"] not in rewritten]
        manifest["files"] = checked_inventory(directory, produced.records, unchanged)
    manifest["timings"] = {**produced.timings, **driver_metrics(steps)}
    fence()
    write_json(FileSystems.join(directory, MANIFEST_FILE), manifest)
    marker = {"instances": statistics["total"]["instances"], **produced.marker}
    leak = held_back(produced.audit_gate, statistics["text_only_audit"])
    card = latest_card(version) if leak is None else None
    complete = publish(output, version, marker, fence, card=card)
    if leak is not None:
        raise NotPublished(not_published(complete, leak))
    return Published(complete, statistics)


def driver_metrics(steps: dict[str, Elapsed]) -> dict[str, int]:
    """The driver's own steps as the manifest's ``timings``, named as the stages' timing
    counters are (``driver/<step>_ms``), so that a benchmark accounts for them too. Apart
    from the counters (``metrics``): a version filtered from another keeps that run's
    counters, and its own timings.

    >>> driver_metrics({"audit": Elapsed(1.5)})
    {'driver/audit_ms': 1500}
    """
    return {f"{DRIVER}/{step}_ms": round(elapsed.seconds * 1000) for step, elapsed in steps.items()}


def not_published(version: Version, leak: str) -> str:
    """What a version held back by its audit gate says, in one line."""
    return (
        f"{version.directory}: {leak}; the version is complete but not published as the "
        "latest (--audit_gate fail)"
    )


def card_options(manifest: dict) -> dict:
    """The content options a card lists, those that applied: the search's own (its grids,
    its split, ...) only when the run searched (--optimize), or they read as a search that
    never ran; --captions_license not for the synthetic corpus, the project's own text."""
    options = manifest["options"]
    unused = set()
    if not options.get("optimize", False):
        unused |= {
            option.name
            for option in dataclasses.fields(GenerateOptions)
            if option.metadata["group"] == Group.SEARCH and option.name != "optimize"
        }
    if corpus(manifest).tag == SYNTHETIC:
        unused.add("captions_license")
    return {name: value for name, value in content_options(options).items() if name not in unused}


def latest_card(version: Version) -> str:
    """The root's card when ``version`` is the latest: its own card, from its manifest and
    statistics as written, with every path taken from the root."""
    manifest = read_manifest(version.directory)
    statistics = read_json(dataset_path(version.directory, STATISTICS_FILE))
    return root_card(
        {**manifest, "options": card_options(manifest)},
        statistics,
        dataset_plot_captions(statistics),
        split_bytes(dataset_path(version.directory)),
        f"{VERSIONS_DIRECTORY}/{version.name}/{DATASET}",
        first_instance(dataset_path(version.directory)),
    )


def write_card(directory: str, manifest: dict, statistics: dict) -> None:
    """The dataset card and the plots it shows beside it: part of the version's files."""
    plots = dataset_plots(statistics)
    for name, (_, png) in plots.items():
        write_file(dataset_path(directory, name), png)
    card = version_card(
        {**manifest, "options": card_options(manifest)},
        statistics,
        {name: caption for name, (caption, _) in plots.items()},
        split_bytes(dataset_path(directory)),
        first_instance(dataset_path(directory)),
    )
    write_file(dataset_path(directory, CARD_FILE), card.encode("utf-8"))
