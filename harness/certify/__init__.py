"""certify: the capability table, the preflight, the certificate's data, fleet certification."""
