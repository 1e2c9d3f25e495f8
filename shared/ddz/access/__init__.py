"""Access: who is calling, and what they may do."""
