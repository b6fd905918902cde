"""Visual Madlibs' multiple choice (Yu et al. 2015, section 4): one target and three decoys.

``--decoys madlibs_easy``: three captions drawn at random from other images
(the ``random`` strategy with four options). ``--decoys madlibs_hard``: three
captions of other images that contain the same objects as the target's image.
:mod:`transforms.english.objects` defines "same objects" (most shared COCO
categories, then fewest others, ties at random by seed) and where objects come
from: ``--objects`` instance files, else the captions through its lexicon. A
global step writes every image's objects beside the corpus; each target then
takes the ``DRAWN`` closest images of its pool in that order, one caption of each
(seeded), and keeps the first three that pass the validity rules.
"""

import dataclasses
import logging
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from schemas.layout import (
    CAPTIONS_FILE,
    OBJECTS_FILE,
    PARQUET,
    corpus_file,
    corpus_folder,
    shard_pattern,
)
from schemas.options import Group, option
from transforms.corpus.neighbours import Finder, Pool, pool_similarities
from transforms.corpus.read import expand_inputs
from transforms.corpus.split import SPLITS
from transforms.corpus.store import Corpus, CorpusRef, load_corpus, read_npy, write_npy
from transforms.english.objects import (
    CATEGORIES,
    image_objects,
    object_matrix,
    rank_same_objects,
    read_instances,
    tie_keys,
)
from transforms.errors import InputError
from transforms.files import read_parquet_files
from transforms.seeds import keyed_rng
from transforms.strategies.choose import ChoosingStrategy
from transforms.strategies.config import StrategyOptions
from transforms.strategies.invariants import WrittenDataset, holds
from transforms.strategies.random_decoys import YU2015, RandomDecoys, in_drawn_order

DRAWN = 12  # closest images per target: three valid captions among them on any real corpus


class MadlibsEasy(RandomDecoys):
    name = "madlibs_easy"
    num_options = 4
    summary = (
        "Visual Madlibs' easy multiple choice: 3 captions of other images of the target's "
        "split drawn at random; text-only at chance, easy for image models"
    )
    # The split pool by default: drawn from the whole corpus, dev and test decoys are mostly
    # training captions and the target never is (on val2017 the novelty guess got 31.9%).
    pools = ("split", "all")
    filterable = False


@dataclass(frozen=True)
class MadlibsHardOptions(StrategyOptions):
    objects: str = option(
        "",
        "COCO instances files (comma-separated paths or globs, e.g. "
        "annotations/instances_*2014.json) giving each image's objects",
        group=Group.DECOYS,
        empty_means="objects read from the captions through the COCO-category lexicon",
    )


def objects_of_images(corpus: Corpus, objects: str) -> np.ndarray:
    """Images x 80: from the instance files ``objects`` names, else from the captions."""
    image_ids = corpus.image_ids()
    if not objects:
        captions = [[] for _ in image_ids]
        for text, image in zip(corpus.captions["text"], corpus.image_of, strict=True):
            captions[image].append(text.split())
        return object_matrix(image_objects(tokens) for tokens in captions)
    paths = expand_inputs(objects)
    annotated = read_instances(paths)
    missing = [image_id for image_id in image_ids if image_id not in annotated]
    if missing:
        raise InputError(
            f"--objects {', '.join(paths)}: {len(missing)} of {len(image_ids)} images of the "
            f"captions are in no instances file (e.g. image ids {', '.join(missing[:5])}): "
            "give the instances files of the same images"
        )
    return object_matrix(annotated[image_id] for image_id in image_ids)


def write_objects(ref: CorpusRef, *, objects: str) -> CorpusRef:
    """The global step: every image's objects, written once beside the corpus."""
    corpus = load_corpus(ref.directory, embeddings=False)
    matrix = objects_of_images(corpus, objects)
    write_npy(FileSystems.join(ref.directory, OBJECTS_FILE), matrix)
    logging.info(
        "objects of %d images from %s; %d have none",
        len(matrix),
        objects or "the captions",
        int((~matrix.any(axis=1)).sum()),
    )
    return ref


@dataclasses.dataclass
class SameObjects:
    """The finder: each target's candidates, captions of the images closest to its objects."""

    seed: int
    drawn: int
    _pools: dict = dataclasses.field(default_factory=dict, repr=False)

    def pool_objects(self, corpus: Corpus, pool: Pool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the pool's images, their objects, their tie keys), loaded once per pool."""
        key = (corpus.directory, int(pool.rows[0]), len(pool.rows))
        if key not in self._pools:
            images = np.unique(corpus.image_of[pool.rows])
            matrix = read_npy(FileSystems.join(corpus.directory, OBJECTS_FILE))[images]
            ties = tie_keys(corpus.image_ids()[images].tolist(), self.seed)
            self._pools[key] = (images, matrix, ties)
        return self._pools[key]

    def __call__(self, corpus: Corpus, pool: Pool, targets: np.ndarray):
        images, matrix, ties = self.pool_objects(corpus, pool)
        positions = np.searchsorted(images, corpus.image_of[targets])
        unique, inverse = np.unique(positions, return_inverse=True)
        ranked = rank_same_objects(unique, matrix, ties, k=min(self.drawn, len(images) - 1))
        candidates = np.full((len(targets), ranked.candidates.shape[1]), -1, dtype=np.int64)
        for b, target in enumerate(targets.tolist()):
            rng = keyed_rng(self.seed, f"madlibs_hard {corpus.captions['caption_id'][target]}")
            for j, image in enumerate(images[ranked.candidates[inverse[b]]].tolist()):
                rows = corpus.rows_of_image(image)
                candidates[b, j] = rows[rng.integers(len(rows))]
        return candidates, pool_similarities(pool, targets, candidates)


def same_objects_report(directory: str) -> dict:
    """How often "same objects" was met, from the written instances: per decoy, whether its
    image has exactly the target image's categories, and how many of them it shares."""
    corpus = corpus_folder(directory)
    objects = read_npy(FileSystems.join(corpus, OBJECTS_FILE))
    [captions] = read_parquet_files(corpus_file(corpus, CAPTIONS_FILE), ["image_id"])
    image_ids = np.unique(captions.column("image_id").to_numpy(zero_copy_only=False))
    targets, decoys = [], []
    for split in SPLITS:
        pattern = shard_pattern(directory, PARQUET, split)
        for table in read_parquet_files(pattern, ["image_id", "decoy_image_ids"]):
            for image, others in zip(*table.to_pydict().values(), strict=True):
                targets += [image] * len(others)
                decoys += others
    if not decoys:
        return {"decoys": 0}
    target = objects[np.searchsorted(image_ids, targets)]
    decoy = objects[np.searchsorted(image_ids, decoys)]
    shared = (target & decoy).sum(axis=1)
    return {
        "decoys": len(decoys),
        "exactly_the_same_objects": float((target == decoy).all(axis=1).mean()),
        "sharing_at_least_one_object": float((shared > 0).mean()),
        "mean_shared_objects": float(shared.mean()),
        "mean_target_objects": float(target.sum(axis=1).mean()),
        "instances_whose_image_has_no_objects": float((~target.any(axis=1)).mean()),
    }


def same_objects(dataset: WrittenDataset) -> None:
    """The objects written are each image's (instances files, else its captions' categories),
    and every decoy's image is among the DRAWN closest to the target's objects, on a sample:
    fewer than DRAWN images of the pool share more categories, or as many with fewer others.
    """
    corpus, config = dataset.corpus, dataset.config
    image_ids = sorted({c["image_id"] for c in corpus})
    if config.options.objects:
        sets = read_instances(expand_inputs(config.options.objects))
    else:
        texts: dict[str, list] = {}
        for caption in corpus:
            texts.setdefault(caption["image_id"], []).append(caption["text"].split())
        sets = {image: image_objects(texts[image]) for image in image_ids}
    written = read_npy(FileSystems.join(corpus_folder(dataset.directory), OBJECTS_FILE))
    columns = [category_id for category_id, _, _ in CATEGORIES]
    for image, row in zip(image_ids, written, strict=True):
        holds({columns[c] for c in np.flatnonzero(row)} == set(sets[image]), image)
    split_of = {c["image_id"]: c["split"] for c in corpus}
    every = [row for rows in dataset.rows.values() for row in rows]
    rng = np.random.default_rng(2)
    for index in rng.choice(len(every), size=min(dataset.sample, len(every)), replace=False):
        row = every[index]
        target = set(sets[row["image_id"]])
        pool = [
            image
            for image in image_ids
            if image != row["image_id"]
            and (config.decoy_pool == "all" or split_of[image] == split_of[row["image_id"]])
        ]
        keys = {image: (-len(target & sets[image]), len(sets[image] - target)) for image in pool}
        for decoy_image in row["decoy_image_ids"]:
            better = sum(key < keys[decoy_image] for key in keys.values())
            holds(better < DRAWN, (row["example_id"], decoy_image))


class MadlibsHard(ChoosingStrategy):
    name = "madlibs_hard"
    num_options = 4
    summary = (
        "Visual Madlibs' hard multiple choice: 3 captions of other images with the same "
        "objects (--objects, else the captions' COCO categories)"
    )
    pools = ("split", "all")
    limitations = (
        "Images with the same objects are often described alike, so some decoys may also fit "
        "the target's image (next: what the validity rules remove). Without "
        "--objects, an image's objects are the COCO categories its captions name, a subset of "
        "what is in it. statistics.json reports how often the decoys' images have exactly the "
        "target image's objects."
    )
    references = (YU2015,)
    invariants = (same_objects,)
    Options = MadlibsHardOptions
    english_only = (
        "reads the images' objects from the captions through an English lexicon: give "
        "--objects (COCO instances files), which works in any language"
    )

    @classmethod
    def needs_english(cls, options: MadlibsHardOptions) -> str:
        return "" if options.objects else cls.english_only

    prefer = staticmethod(in_drawn_order)

    @classmethod
    def report(cls, directory: str) -> dict:
        return {"same_objects": same_objects_report(directory)}

    def prepare(self, corpus_ref):
        return corpus_ref | "ImageObjects" >> beam.Map(
            write_objects, objects=self.config.options.objects
        )

    def finder(self) -> Finder:
        return SameObjects(seed=self.config.seed, drawn=DRAWN)
