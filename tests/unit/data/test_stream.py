"""``seq2seq/data/stream.py`` (``data.backend: stream``): an epoch sees every pair once and
replays exactly."""

from __future__ import annotations

from collections import Counter

from seq2seq.data.arrow import open_arrow
from seq2seq.data.stream import StreamCorpus
from tests.corpora import arrow_config, table_ids


def test_stream_epoch_sees_every_pair_once_and_replays_exactly(
    synth_corpus, synth_tokenizer, tmp_path
):
    arrow = open_arrow(arrow_config(synth_corpus, tmp_path, max_len=40), synth_tokenizer)
    cfg = arrow_config(synth_corpus, tmp_path, max_len=40).model_copy(
        update={"backend": "stream", "shuffle_buffer": 300}
    )
    corpus = StreamCorpus(cfg, synth_tokenizer)
    assert len(corpus) == len(arrow)
    epoch = corpus.epoch_batches(600, seed=3, epoch=0)
    batches = epoch[0 : len(epoch)]
    assert len(batches) == len(epoch) > 4  # the counting pass predicted the number of batches
    seen = Counter(p for b in batches for p in table_ids(b))
    assert seen == Counter(table_ids(arrow.ds[arrow.rows.tolist()]))
    for b in batches:
        x = corpus.batch(b)
        assert max(x.src.shape[1], x.tgt_in.shape[1]) * x.src.shape[0] <= 600
    again = corpus.epoch_batches(600, seed=3, epoch=0)
    assert again[3:5][1].equals(batches[4])  # a resume at batch 3 replays to the same batches
    assert again[5].equals(batches[5])
    assert again[1].equals(batches[1])  # an earlier batch: the epoch is replayed from its start
    halves = [corpus.epoch_batches(600, 3, 0, rank=r, world=2) for r in (0, 1)]
    assert len(halves[0]) == len(halves[1]) == len(batches) // 2
    assert halves[1][2].equals(batches[5]) and halves[0][2].equals(batches[4])
    later = corpus.epoch_batches(600, seed=3, epoch=1)
    assert not later[0].equals(batches[0])
