"""The players' web front: the player's page and the TableService over gRPC-Web."""
