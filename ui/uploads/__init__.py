"""Uploaded data files: intake with limits and safe names, previews parsed in a confined child process, PDF text."""
