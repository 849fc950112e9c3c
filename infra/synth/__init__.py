"""The synth machinery beside the constructs: the synth cache and its worker, and the checkov and cdk-nag
runners.
"""
