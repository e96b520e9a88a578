"""The observer: records controller-relevant ZooKeeper transitions and Admin-API samples.

- :mod:`.txnlog` / :mod:`.txn_events` — ZooKeeper's own transaction log, the ground truth.
- :mod:`.zk_watcher` — live kazoo watcher plus the current-view API the nemesis resolves roles with.
- :mod:`.reconcile` — merges both after the run into the complete ordered history and a gap report.
- :mod:`.admin_sampler` — periodic Admin-API metadata samples (also for brokers without ZooKeeper).
- :mod:`.source` — which of these a run uses, per distribution (the runner asks it, never the mode).
- :mod:`.kafka_znodes` — Kafka's znode paths and formats (controller-spec §1), shared by all of them.

See docs/observer.md.
"""
