"""kafka-chaos: a chaos and conformance harness for real Kafka-compatible clusters."""

__version__ = "0.1.0"
