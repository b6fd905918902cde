"""Invariants every generated dataset must satisfy, read back from its files.

Used by the pipeline test (synthetic corpus) and the end-to-end COCO test.
The decoy check recomputes neighbourhoods by brute force with numpy and
simSURF with nltk itself, sharing nothing with the pipeline's search or
kernel.
"""

import glob
import json
import os
import warnings

import numpy as np
import pyarrow.parquet as pq
from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

from pipelines.options import GenerateOptions
from pipelines.versions import verify_version
from schemas.instance import MCIC_OPTIONS, parse_mcic_line
from schemas.layout import MCIC, PARQUET, TFRECORD, shard_pattern
from tests.tfrecord_reader import parse_example, read_records
from transforms.language.chunker import chunk
from transforms.language.forced_choice_tasks import (
    OTHER_CAPTIONS,
    Task,
    TaskContext,
    main_chunk,
    mention_alone,
    replace_mention,
    swap_people,
)
from transforms.language.objects import CATEGORIES, image_objects, read_instances
from transforms.strategies.madlibs import DRAWN, OBJECTS_FILE
from transforms.strategies.registry import STRATEGIES
from transforms.strategies.validity import RULES

SPLITS = ("train", "dev", "test")


def read_parquet(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, PARQUET, split)))
    assert files, f"no Parquet files for {split} in {output}"
    rows = []
    for path in files:
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def read_tfrecord(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, TFRECORD, split)))
    assert files, f"no TFRecord files for {split} in {output}"
    return [parse_example(record) for path in files for record in read_records(path)]


def read_text(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, MCIC, split)))
    assert files, f"no text files for {split} in {output}"
    rows = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            rows.extend(parse_mcic_line(line) for line in handle if line.strip())
    return rows


def nltk_sim_surf(candidate: list[str], target: list[str]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bleu = sentence_bleu([target], candidate)
    return bleu / brevity_penalty(len(target), len(candidate))


def check_instances(rows: list[dict], num_options: int) -> None:
    """What every strategy's instances satisfy, structurally.

    A decoy is named by (source caption id, edit): an edited decoy may come from the
    target's own caption; unedited decoys are captions of other images, best Score first.
    """
    for row in rows:
        assert len(row["options"]) == num_options
        assert len(set(row["options"])) == num_options, f"{row['example_id']}: repeated option"
        assert 0 <= row["label"] < num_options
        assert row["option_caption_ids"][row["label"]] == row["target_caption_id"]
        assert row["option_image_ids"][row["label"]] == row["image_id"]
        sources = list(zip(row["option_caption_ids"], row["option_edits"], strict=True))
        del sources[row["label"]]
        decoys = zip(row["decoy_caption_ids"], row["decoy_edits"], strict=True)
        assert sorted(sources) == sorted(decoys)
        unedited = [i for i, edit in enumerate(row["decoy_edits"]) if not edit]
        assert row["image_id"] not in [row["decoy_image_ids"][i] for i in unedited]
        scores = [row["decoy_score"][i] for i in unedited]
        assert scores == sorted(scores, reverse=True)
        for i, edit in enumerate(row["decoy_edits"]):
            if edit:
                assert np.isnan(row["decoy_score"][i]) and np.isnan(row["decoy_sim_pv"][i])


def check_positive_score(rows: list[dict], surf_limit: float) -> None:
    for row in rows:
        assert all(score > 0 for score in row["decoy_score"])
        assert all(surf < surf_limit for surf in row["decoy_sim_surf"])


def image_captions(corpus: list[dict]) -> dict[str, list[str]]:
    captions: dict[str, list[str]] = {}
    for caption in corpus:
        captions.setdefault(caption["image_id"], []).append(caption["text"])
    return captions


def valid_decoy(text: str, own_captions: list[str], surf_limit: float) -> bool:
    """SPEC "Validity", recomputed with nltk: no copy of, or near-copy of, an image caption."""
    return text not in own_captions and all(
        nltk_sim_surf(text.split(), own.split()) < surf_limit for own in own_captions
    )


def check_validity(corpus: list[dict], rows: list[dict], surf_limit: float, sample: int) -> None:
    """Every decoy: no text of the target's image (all rows); near-copies by nltk (a sample)
    among the unedited decoys (an edit of the target's caption is near it by design)."""
    captions = image_captions(corpus)
    for row in rows:
        own = set(captions[row["image_id"]])
        decoys = [o for i, o in enumerate(row["options"]) if i != row["label"]]
        assert not own & set(decoys), f"{row['example_id']}: a decoy copies an image caption"
    rng = np.random.default_rng(1)
    for index in rng.choice(len(rows), size=min(sample, len(rows)), replace=False):
        row = rows[index]
        for i, option in enumerate(row["options"]):
            if i != row["label"] and not row["option_edits"][i]:
                assert valid_decoy(option, captions[row["image_id"]], surf_limit), row


def check_formats_agree(output: str, split: str, rows: list[dict], num_options: int) -> None:
    """TFRecord (and, for five options, the MCIC text files) hold the Parquet rows."""
    by_id = {row["example_id"]: row for row in rows}
    assert len(by_id) == len(rows), "duplicate example ids"
    tfrecords = read_tfrecord(output, split)
    if num_options == MCIC_OPTIONS:
        texts = read_text(output, split)
    else:
        texts = []
        assert not glob.glob(shard_pattern(output, MCIC, split)), "MCIC files of k != 5"
    assert len(tfrecords) == len(rows) and len(texts) in (0, len(rows))
    for features in tfrecords:
        row = by_id[features["example_id"][0].decode()]
        assert [o.decode() for o in features["options"]] == row["options"]
        assert features["label"] == [row["label"]]
        assert [c.decode() for c in features["decoy_caption_ids"]] == row["decoy_caption_ids"]
        np.testing.assert_allclose(features["decoy_score"], row["decoy_score"], rtol=1e-6)
    for text in texts:
        row = by_id[text["example_id"]]
        assert text["options"] == row["options"]
        assert text["label"] == row["label"]
        assert text["image_file"] == row["image_file"]


def check_decoys_recomputed(
    output: str,
    rows: list[dict],
    *,
    neighbours: int,
    lam: float,
    surf_limit: float,
    decoy_pool: str,
    sample: int,
    exact_search: bool = True,
    own_caption_rule: bool = False,
    seed: int = 0,
) -> int:
    """Brute force + nltk: the decoys are the top 4 by Score of the top-N list.

    With an approximate index (``exact_search=False``) the pipeline's
    candidate lists differ from brute force by design; then each decoy's
    simSURF, simPV and Score are still recomputed and checked. Returns how
    many sampled targets were checked.
    """
    corpus = pq.read_table(os.path.join(output, "corpus", "captions.parquet")).to_pylist()
    embeddings = np.load(os.path.join(output, "corpus", "embeddings.npy"))
    row_of = {caption["caption_id"]: r for r, caption in enumerate(corpus)}
    images = np.array([caption["image_id"] for caption in corpus])
    splits = np.array([caption["split"] for caption in corpus])
    captions = image_captions(corpus)
    rng = np.random.default_rng(seed)
    for index in rng.choice(len(rows), size=min(sample, len(rows)), replace=False):
        instance = rows[index]
        target = row_of[instance["target_caption_id"]]
        target_tokens = corpus[target]["text"].split()
        for decoy_id, pv, surf, score in zip(
            instance["decoy_caption_ids"],
            instance["decoy_sim_pv"],
            instance["decoy_sim_surf"],
            instance["decoy_score"],
            strict=True,
        ):
            decoy = row_of[decoy_id]
            assert abs(nltk_sim_surf(corpus[decoy]["text"].split(), target_tokens) - surf) < 1e-9
            assert abs(float(embeddings[decoy] @ embeddings[target]) - pv) < 1e-5
            assert abs(lam * pv + (1 - lam) * surf - score) < 1e-12
        if not exact_search:
            continue
        pool = images != images[target]
        if decoy_pool == "split":
            pool &= splits == splits[target]
        candidates = np.flatnonzero(pool)
        cosines = embeddings[candidates] @ embeddings[target]
        top = candidates[np.argsort(-cosines, kind="stable")[:neighbours]]
        own_rows = [r for r in np.flatnonzero(images == images[target]) if r != target]
        own_closeness = (
            float(np.mean(embeddings[own_rows] @ embeddings[target])) if own_rows else np.inf
        )
        scores = {}
        for candidate in top:
            surf = nltk_sim_surf(corpus[candidate]["text"].split(), target_tokens)
            pv = float(embeddings[candidate] @ embeddings[target])
            score = 0.0 if surf >= surf_limit else lam * pv + (1 - lam) * surf
            if score > 0 and not (own_caption_rule and pv >= own_closeness - 1e-6):
                scores[int(candidate)] = score
        chosen_texts: list[str] = []
        for candidate, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
            text = corpus[candidate]["text"]
            if text not in chosen_texts and valid_decoy(text, captions[images[target]], surf_limit):
                chosen_texts.append(text)
                if len(chosen_texts) == 4:
                    break
        assert sorted(chosen_texts) == sorted(
            o for i, o in enumerate(instance["options"]) if i != instance["label"]
        ), instance["example_id"]
    return min(sample, len(rows))


def check_dataset(options: GenerateOptions, *, sample: int = 30) -> dict[str, list[dict]]:
    """All invariants of the dataset ``options`` generated; returns its Parquet rows.

    The validity rules hold for every strategy; the strategy's own ``invariants``
    name the further checks below.
    """
    output, n_dev, n_test = options.output, options.n_dev, options.n_test
    verify_version(output)  # the files checked below are exactly those the manifest lists
    surf_limit, strategy = options.surf_limit, STRATEGIES[options.decoys]
    decoy_pool = options.strategy_config().decoy_pool
    rows = {split: read_parquet(output, split) for split in SPLITS}
    corpus = pq.read_table(os.path.join(output, "corpus", "captions.parquet")).to_pylist()
    split_images = {
        split: {c["image_id"] for c in corpus if c["split"] == split} for split in SPLITS
    }
    assert len(split_images["dev"]) == n_dev
    assert len(split_images["test"]) == n_test
    assert not split_images["dev"] & split_images["test"]
    assert not split_images["train"] & (split_images["dev"] | split_images["test"])
    for split in SPLITS:
        assert {row["image_id"] for row in rows[split]} <= split_images[split]
        assert all(row["split"] == split for row in rows[split])
        check_instances(rows[split], strategy.num_options)
        check_formats_agree(output, split, rows[split], strategy.num_options)
    if decoy_pool == "split":
        image_split = {c["image_id"]: c["split"] for c in corpus}
        for split in SPLITS:
            for row in rows[split]:
                assert {image_split[i] for i in row["decoy_image_ids"]} == {split}
    every = [row for split in SPLITS for row in rows[split]]
    check_validity(corpus, every, surf_limit, sample=10 * sample)
    if "positive_score" in strategy.invariants:
        check_positive_score(every, surf_limit)
    # Adversarial filtering swaps decoys for reserve candidates further down Algorithm 1's
    # preference order by design, so the brute-force recomputation no longer applies.
    if "algorithm_1" in strategy.invariants and not options.adversarial_rounds:
        check_decoys_recomputed(
            output,
            every,
            neighbours=options.neighbours,
            lam=options.score_lambda,
            surf_limit=surf_limit,
            decoy_pool=decoy_pool,
            sample=sample,
            exact_search=len(corpus) <= options.index_exact_limit,
            own_caption_rule=options.own_caption_rule,
        )
    if "same_objects" in strategy.invariants:
        check_same_objects(output, corpus, every, options.objects, decoy_pool, sample=sample)
    if "forced_choice" in strategy.invariants:
        check_forced_choice(corpus, every, strategy.task, options.cooccurrence_images)
    if "closed_sets" in strategy.invariants:
        for split in SPLITS:
            check_closed_sets(rows[split])
    with open(os.path.join(output, "statistics.json")) as handle:
        statistics = json.load(handle)
    for split in SPLITS:
        assert statistics["splits"][split]["instances"] == len(rows[split])
        assert statistics["splits"][split]["images"] == len({r["image_id"] for r in rows[split]})
    assert set(statistics["validity"]) == {f"validity/{rule}" for rule in RULES}
    skipped = sum(statistics["skipped"].values())
    drops = sum(v for k, v in statistics["skipped"].items() if k.startswith("decoys/"))
    assert len({row["target_caption_id"] for row in every}) + drops == len(corpus)
    assert skipped >= drops
    assert not glob.glob(os.path.join(output, "*", "beam-temp-*")), "temporary files left"
    with open(os.path.join(output, "manifest.json")) as handle:
        manifest = json.load(handle)
    assert manifest["options"]["neighbours"] == options.neighbours
    assert all(len(entry["sha256"]) == 64 for entry in manifest["inputs"])
    return rows


def check_closed_sets(rows: list[dict]) -> None:
    """Instances come in sets: five instances share one option set, each member the target once.

    So any function of the option texts alone is right on exactly one instance of each set.
    """
    by_set: dict[frozenset, list[dict]] = {}
    for row in rows:
        by_set.setdefault(frozenset(row["option_caption_ids"]), []).append(row)
    for members in by_set.values():
        assert len(members) == 5, [row["example_id"] for row in members]
        assert {row["target_caption_id"] for row in members} == set(
            members[0]["option_caption_ids"]
        )
        assert len({row["image_id"] for row in members}) == 5
        assert len({frozenset(row["options"]) for row in members}) == 1


def check_same_objects(
    output: str, corpus: list[dict], rows: list[dict], objects: str, decoy_pool: str, sample: int
) -> None:
    """madlibs_hard: the objects written are each image's (instances file, else its captions'
    categories), and every decoy's image is among the DRAWN closest to the target's objects:
    fewer than DRAWN images of the pool share more categories, or as many with fewer others.
    """
    image_ids = sorted({c["image_id"] for c in corpus})
    if objects:
        sets = read_instances(glob.glob(objects))
    else:
        texts: dict[str, list] = {}
        for caption in corpus:
            texts.setdefault(caption["image_id"], []).append(caption["text"].split())
        sets = {image: image_objects(texts[image]) for image in image_ids}
    written = np.load(os.path.join(output, "corpus", OBJECTS_FILE))
    columns = [category_id for category_id, _, _ in CATEGORIES]
    for image, row in zip(image_ids, written, strict=True):
        assert {columns[c] for c in np.flatnonzero(row)} == set(sets[image]), image
    split_of = {c["image_id"]: c["split"] for c in corpus}
    rng = np.random.default_rng(2)
    for index in rng.choice(len(rows), size=min(sample, len(rows)), replace=False):
        row = rows[index]
        target = set(sets[row["image_id"]])
        pool = [
            image
            for image in image_ids
            if image != row["image_id"]
            and (decoy_pool == "all" or split_of[image] == split_of[row["image_id"]])
        ]
        keys = {image: (-len(target & sets[image]), len(sets[image] - target)) for image in pool}
        for decoy_image in row["decoy_image_ids"]:
            better = sum(key < keys[decoy_image] for key in keys.values())
            assert better < DRAWN, (row["example_id"], decoy_image)


def is_span(part: list[str], whole: list[str]) -> bool:
    """Whether ``part`` is a contiguous run of ``whole``'s tokens."""
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


def check_forced_choice(
    corpus: list[dict], rows: list[dict], task: Task, cooccurrence_images: int
) -> None:
    """Each task's construction rule (Hodosh & Hockenmaier 2016, section 3), on every instance,
    in terms of the chunker's mentions (its own precision is measured separately)."""
    caption = {c["caption_id"]: c for c in corpus}
    kind = task.kind
    context = TaskContext.build(
        (
            (c["caption_id"], c["image_id"], c["text"].split())
            for c in corpus
            if c["split"] == "train"
        ),
        min_images=cooccurrence_images,
    )
    for row in rows:
        target = caption[row["target_caption_id"]]
        text = target["text"].split()
        label, [decoy_source], [edit] = row["label"], row["decoy_caption_ids"], row["decoy_edits"]
        answer, decoy = row["options"][label].split(), row["options"][1 - label].split()
        main = main_chunk(chunk(text), kind)
        assert main is not None, row
        mention = text[main.start : main.end]
        assert bool(row["option_edits"][label]) == task.target_is_mention, row
        assert answer == (mention if task.target_is_mention else text), row
        if task.pool == OTHER_CAPTIONS:
            source = caption[decoy_source]
            assert not edit and source["text"].split() == decoy, row
            assert source["split"] == target["split"] and source["image_id"] != target["image_id"]
            assert main_chunk(chunk(decoy), kind).lemma == main.lemma, row
            continue
        assert edit.startswith(f"{task.name}:") and decoy_source == target["caption_id"], row
        if task.rule is swap_people:
            assert sorted(decoy) == sorted(text) and decoy != text, row
        elif task.rule is mention_alone:
            assert decoy == mention, row
        else:  # replace: the mention alone differs, by a train mention of an unrelated head
            assert task.rule is replace_mention, task
            end = len(decoy) - (len(text) - main.end)
            assert decoy[: main.start] == text[: main.start] and decoy[end:] == text[main.end :]
            inserted = " ".join(decoy[main.start : end])
            drawable = context.mentions[kind, main.plural]
            [lemma] = [lemma for lemma, (texts, _) in drawable.items() if inserted in texts]
            assert lemma not in context.cooccurring[kind].get(main.lemma, ()), row
