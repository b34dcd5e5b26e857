"""The product as a system: scale-out with workers, evaluation speed, the privacy risk report."""
