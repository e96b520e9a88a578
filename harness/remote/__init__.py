"""Nodes the harness does not start (``--nodes FILE``, docs/remote.md): the nodes file
(:mod:`harness.remote.nodes_file`), SSH access to a host (:mod:`harness.remote.ssh`) and the local
journal of every change made on a host, undone on heal, on a signal, by the next command and by
``kafka-chaos cleanup --nodes FILE`` (:mod:`harness.remote.journal`)."""
