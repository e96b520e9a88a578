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
