"""The recorder service: consumes every event into the event store and answers reads
(RecorderService in protos/ddz/v1/recorder.proto)."""
