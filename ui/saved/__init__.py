"""Saved chats: the signed on-disk store, and carrying a saved conversation into a fresh agent."""
