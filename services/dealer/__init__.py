"""The dealer service: makes each hand's server seed, deals from it and publishes the
hand's first events (DealerService in protos/ddz/v1/dealer.proto)."""
