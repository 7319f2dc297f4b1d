"""Local development tooling: the single-node Kafka the project starts itself
(:mod:`~stream.devtools.kafka_local`, its Maven pom and log4j2 config in ``kafka/``) and
the end-to-end demo (:mod:`~stream.devtools.demo`, :mod:`~stream.devtools.report`).
Not used by the worker."""
