"""reference/semantics.py: the facts scenarios ask ``ctx.semantics`` where ZooKeeper mode and KRaft differ."""

from __future__ import annotations

import pytest

from reference import semantics


def test_each_model_is_found_by_name_and_an_unknown_one_is_refused():
    assert semantics.for_model("zk") is semantics.ZK and semantics.for_model("kraft") is semantics.KRAFT
    with pytest.raises(ValueError, match="unknown controller model"):
        semantics.for_model("raft")


def test_a_broker_cut_from_the_control_plane_registers_anew_only_in_zookeeper_mode():
    # ZK §5.1/§5.2: the session expires, the ephemeral registration goes, a new czxid comes back;
    # KRaft §9.3: fenced, then unfenced with the registration (and broker epoch) it had
    assert semantics.ZK.control_plane_loss_reregisters and not semantics.KRAFT.control_plane_loss_reregisters
    assert "new broker epoch" in semantics.ZK.control_plane_return_rule
    assert "same broker epoch" in semantics.KRAFT.control_plane_return_rule
    assert "session expired" in semantics.ZK.control_plane_loss_rule
    assert "fenced" in semantics.KRAFT.control_plane_loss_rule


def test_only_the_zookeeper_mode_controller_is_reached_over_the_inter_broker_listener():
    # a controller cut from the brokers' replication links blocks AlterPartition in ZooKeeper mode only
    assert semantics.ZK.controller_channel_is_inter_broker
    assert not semantics.KRAFT.controller_channel_is_inter_broker


def test_controller_epoch_rules():
    assert semantics.ZK.controller_epoch_ok(4, 5) and not semantics.ZK.controller_epoch_ok(4, 6)
    assert semantics.KRAFT.controller_epoch_ok(4, 6) and not semantics.KRAFT.controller_epoch_ok(4, 4)
    assert not semantics.KRAFT.controller_epoch_ok(4, None)
