"""One folder per lesson: its grading spec and whatever only that lesson uses."""
