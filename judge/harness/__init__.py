"""Untrusted side: runs inside the sandbox. Imports only stdlib, torch and the language package."""
