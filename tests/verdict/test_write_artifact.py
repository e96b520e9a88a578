"""RunRecorder.write_artifact: evidence files inside the run record (e.g. the KRaft metadata log segments)."""

import pytest

from harness.record import RecordError, RunRecorder


def test_artifact_lands_in_the_published_record(tmp_path):
    rec = RunRecorder(tmp_path, "s.x")
    rec.write_artifact("metadata_log/00000000000000000000.log", b"\x00\x01")
    rec.finish("PASS", "ok")
    assert (rec.final_dir / "metadata_log" / "00000000000000000000.log").read_bytes() == b"\x00\x01"
    with pytest.raises(RecordError):
        rec.write_artifact("late.bin", b"")


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside", "a/../../b"])
def test_artifact_path_stays_inside_the_record(tmp_path, bad):
    rec = RunRecorder(tmp_path, "s.x")
    with pytest.raises(ValueError, match="inside the run record"):
        rec.write_artifact(bad, b"x")
    rec.finish("PASS", "ok")


def test_read_events_stops_at_the_lines_written_when_asked(tmp_path):
    """network.client_only read its own record mid-run and met half a line another thread was writing
    (RecordError ... not valid JSON: UNKNOWN(script) in a 4.1.2 certification). A write in progress is
    bytes past the size the recorder has counted: reads stop there."""
    rec = RunRecorder(tmp_path, "s.x")
    for i in range(5):
        rec.emit("client", f="send", n=i)
    assert len(rec.read_events()) == 5
    rec._events.write(b'{"seq":5,"t":1.0,"type":"cli')      # another thread's write, half done
    assert [e["n"] for e in rec.read_events()] == [0, 1, 2, 3, 4]
    rec._events.write(b'ent","f":"send","n":5}\n')
    rec._size += len(b'{"seq":5,"t":1.0,"type":"client","f":"send","n":5}\n')
    assert len(rec.read_events()) == 6
    rec.finish("PASS", "ok")
