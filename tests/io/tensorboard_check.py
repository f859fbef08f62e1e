"""Reads the event file of tests/io/event_writer.cpp with TensorBoard's own
reader (EventAccumulator) and checks the scalars and the histogram; checks
every record's framing and masked CRC-32C with TensorBoard's CRC function.
Usage: tensorboard_check.py <logdir> <event file>"""
import math
import struct
import sys

logdir, path = sys.argv[1], sys.argv[2]

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

# Framing: uint64 length, masked CRC of it, data, masked CRC of the data.
data = open(path, "rb").read()
pos, records = 0, 0
while pos < len(data):
    (length,) = struct.unpack_from("<Q", data, pos)
    (len_crc,) = struct.unpack_from("<I", data, pos + 8)
    assert len_crc == masked_crc32c(data[pos:pos + 8]), f"length CRC of record {records}"
    body = data[pos + 12:pos + 12 + length]
    (data_crc,) = struct.unpack_from("<I", data, pos + 12 + length)
    assert data_crc == masked_crc32c(body), f"data CRC of record {records}"
    pos += 16 + length
    records += 1
assert records == 12, records

acc = ea.EventAccumulator(logdir, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0})
acc.Reload()
tags = acc.Tags()
assert "loss" in tags["scalars"], tags
assert "weights" in tags["histograms"], tags
scalars = acc.Scalars("loss")
assert [s.step for s in scalars] == list(range(10)), [s.step for s in scalars]
for s in scalars:
    assert s.value == 0.5 ** s.step, (s.step, s.value)
    assert s.wall_time > 1.6e9
histos = acc.Histograms("weights")
assert len(histos) == 1 and histos[0].step == 3
h = histos[0].histogram_value
assert h.num == 100 and h.min == 0 and math.isclose(h.max, 9.9), h
assert math.isclose(h.sum, 495.0) and math.isclose(h.sum_squares, 3283.5), h
assert list(h.bucket) == [10.0] * 10, h.bucket
assert len(h.bucket_limit) == 10 and h.bucket_limit[-1] == h.max, h.bucket_limit
assert all(math.isclose(b, 0.99 * (k + 1)) for k, b in enumerate(h.bucket_limit)), h.bucket_limit
print(f"tensorboard_check: OK ({records} records; TensorBoard read {len(scalars)} scalars and 1 histogram)")
