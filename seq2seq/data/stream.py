"""``data.backend: stream``: the training split read, cleaned and tokenised on the fly, for corpora
that do not fit on disk twice (docs/data.md). Every rank reads the whole stream and keeps its share;
a resume replays the epoch's stream up to its batch (``StreamEpoch``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from seq2seq.config import DataConfig
from seq2seq.data.arrow import Drops, clean_rows, encode_dataset, table_batch, table_lengths
from seq2seq.data.batch import Batch, cut_runs, length_batches, target_vocab_mask
from seq2seq.data.text import split_origin
from seq2seq.data.tokenizer import Tokenizer

if TYPE_CHECKING:
    import torch


class StreamCorpus:
    """Pairs read, cleaned and tokenised on the fly (``datasets.IterableDataset``), bucketed by
    length within consecutive buffers of ``shuffle_buffer`` kept pairs, held as Arrow tables."""

    def __init__(self, cfg: DataConfig, tok: Tokenizer, split: str = "train", what: str = "train"):
        self.cfg, self.tok, self.split = cfg, tok, split
        # The counting pass: per buffer, the distinct (target, source) lengths (K, 2) and how many
        # pairs have each (K,), enough to count an epoch's batches for any budget; and its tgt ids
        self.lengths: list[tuple[np.ndarray, np.ndarray]] = []
        self.tgt_ids_seen: list[np.ndarray] = []
        drops = Drops(cfg.max_len)
        for buf in self._buffers(drops):
            src_lens, tgt_lens = table_lengths(buf)
            lens = np.stack([tgt_lens, src_lens], 1)
            self.lengths.append(np.unique(lens, axis=0, return_counts=True))
            self.tgt_ids_seen.append(np.unique(_flat(buf.column("tgt_ids"))))
        drops.log(what, split_origin(cfg, split))
        self.n = int(sum(counts.sum() for _, counts in self.lengths))

    def __len__(self) -> int:
        return self.n

    def target_vocab(self, vocab_size: int) -> torch.Tensor:
        """(V,) bool: the target ids of the kept pairs, and EOS (``batch.target_vocab_mask``),
        gathered by the counting pass at start-up: no further pass over the stream."""
        return target_vocab_mask(self.tgt_ids_seen, vocab_size)

    def _buffers(self, drops: Drops | None = None) -> Iterator:
        """Consecutive buffers of ``shuffle_buffer`` kept pairs, as pyarrow Tables."""
        import pyarrow as pa
        from datasets import IterableDataset

        gen_kwargs = {"cfg_json": self.cfg.model_dump_json(), "split": self.split}
        rows = IterableDataset.from_generator(clean_rows, gen_kwargs=gen_kwargs)
        size, parts, n = self.cfg.shuffle_buffer, [], 0
        ids = pa.list_(pa.int32())
        # Rows come as Python lists: datasets' own Arrow formatting of an IterableDataset is slower.
        chunks = encode_dataset(rows, self.tok, self.cfg.max_len).iter(batch_size=1000)
        for chunk in itertools.chain(chunks, [None]):
            if chunk is not None:
                codes = np.asarray(chunk["drop"], dtype=np.int8)
                if drops is not None:
                    drops.add(codes, np.asarray(chunk["line_no"]))
                keep = np.flatnonzero(codes == 0).tolist()
                cols = {
                    c: pa.array([chunk[c][i] for i in keep], ids) for c in ("src_ids", "tgt_ids")
                }
                parts.append(pa.table(cols))
                n += len(keep)
            while n >= size or (chunk is None and n):
                table = pa.concat_tables(parts)
                yield table.slice(0, size)
                parts, n = [table.slice(size)], max(0, n - size)

    def epoch_batches(
        self, batch_tokens: int, seed: int, epoch: int, rank: int = 0, world: int = 1
    ) -> StreamEpoch:
        """This rank's batches for ``epoch``; their number is known from the counting pass."""
        total = 0
        for pairs, counts in self.lengths:
            need = np.maximum(pairs[:, 1], pairs[:, 0] + 1)  # columns (target, source)
            total += len(cut_runs(zip(need.tolist(), counts.tolist(), strict=True), batch_tokens))
        return StreamEpoch(self, (batch_tokens, seed, epoch), total, rank, world)

    def global_batches(self, batch_tokens: int, seed: int, epoch: int) -> Iterator:
        """Every batch of the epoch in order, as pyarrow Tables; buffer i is shuffled and cut by
        ``length_batches`` seeded with (seed, epoch, i)."""
        for i, buf in enumerate(self._buffers()):
            for idx in length_batches(*table_lengths(buf), batch_tokens, seed, epoch, part=i):
                yield buf.take(idx)

    def batch(self, table, pad_multiple: int = 1, max_width=None, pin=False) -> Batch:
        """``table`` as an unpadded, unpinned ``Batch`` (the options are for ``memory``)."""
        return table_batch(table)


class StreamEpoch(Sequence):
    """One rank's batches of one stream epoch, made in order as they are asked for. Asking for a
    later position reads on to it; an earlier one replays the epoch from its start (exact, as
    batches are a pure function of (seed, epoch)). The training loop asks in order, so only a
    resume, which starts at the checkpoint's batch, reads batches it does not train on."""

    def __init__(self, corpus: StreamCorpus, args: tuple, total: int, rank: int, world: int):
        self.corpus, self.args = corpus, args  # (batch_tokens, seed, epoch)
        self.rank, self.world = rank, world
        self.n = (total - total % world) // world
        self.pos, self.it = 0, self._mine()

    def _mine(self) -> Iterator[tuple]:
        stream = itertools.islice(self.corpus.global_batches(*self.args), self.n * self.world)
        return itertools.islice(stream, self.rank, None, self.world)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        if isinstance(key, int):
            return self[key : key + 1][0]
        start, stop, step = key.indices(self.n)
        if step != 1:
            raise IndexError("a stream epoch is read in order, without a step")
        if start < self.pos:  # an earlier batch: replay from the start of the epoch
            self.pos, self.it = 0, self._mine()
        for _ in itertools.islice(self.it, start - self.pos):
            self.pos += 1
        out = list(itertools.islice(self.it, max(0, stop - start)))
        self.pos += len(out)
        return out


def _flat(ids) -> np.ndarray:
    """A pyarrow list<int> column (chunked or not) -> (N,) its values, in row order."""
    import pyarrow.compute as pc

    return pc.list_flatten(ids).to_numpy(zero_copy_only=False)


def stream_sentences(cfg: DataConfig, side: str) -> Iterator[str]:
    """One side's sentences of the kept pairs, streamed (for tokenizer training)."""
    return (row[side] for row in clean_rows(cfg.model_dump_json(), "train") if row[side])
