"""sentence-transformers models (all-MiniLM-L6-v2 and its kind) from a local folder.

Threads: loading and encoding run on PyTorch's intra-op pool, which this module leaves
alone; the caller gives the process its share first (transforms.threads.limit_torch).
Memory: the encoder's process keeps the heap its batches free (memory.hold_freed_heap),
which otherwise faulted every batch's activations in again.
"""

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from transforms.corpus.encoders.base import EncoderIdentity, SentenceEncoder
from transforms.errors import InputError, first_line
from transforms.memory import hold_freed_heap
from transforms.progress import quiet_model_libraries

# Batches of 64 encode 1.1x faster than 256 on one thread (benchmarks/encoder.py,
# docs/benchmarks.md): a batch's activations stay in the caches; the vectors agree to 1e-7.
BATCH_SIZE = 64


def length_order(texts: Sequence[str]) -> np.ndarray:
    """The texts' rows by character length, ties by row: batches of similar lengths pad
    little, and the batches depend on the texts alone, not on how a caller sliced them.

    >>> length_order(["a dog", "a", "a cat", "dog"]).tolist()
    [1, 3, 0, 2]
    """
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    return np.argsort(lengths, kind="stable")


class SentenceTransformersEncoder(SentenceEncoder):
    """A ``SentenceTransformer`` on the CPU.

    The same texts in the same order give the same bytes: they are encoded in batches of
    ``batch_size`` by length (length_order), so each text meets the same batch-mates.
    Padding inside a batch can move a vector at the 1e-7 level, so the same texts in
    another order or batching agree to about that, not to the bit; the pipeline passes
    each shard's texts in a fixed order.
    """

    def __init__(self, folder: Path, identity: EncoderIdentity, batch_size: int = BATCH_SIZE):
        quiet_model_libraries()
        hold_freed_heap()
        from sentence_transformers import SentenceTransformer

        self.identity = identity
        self._batch_size = batch_size
        try:
            self._model = SentenceTransformer(str(folder), device="cpu")
        except Exception as error:  # OSError (files missing), ValueError (unknown type), ...
            raise InputError(
                f"validity model {identity.model}: sentence-transformers cannot load {folder} "
                f"({first_line(error)})"
            ) from error

    @property
    def dim(self) -> int:
        return int(self._model.get_embedding_dimension())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        order = length_order(texts)
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            vectors[rows] = self._model.encode(
                [texts[row] for row in rows],
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)
        # float32 rows of norm 1 to float32's precision, whatever the model's last layer did
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, np.finfo(np.float32).tiny)
