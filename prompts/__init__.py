"""The LLM synthesizer's prompt templates, shipped as package data (see README.md)."""
