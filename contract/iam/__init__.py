"""IAM as doctable writes it: each command's policy, the CDK execution policy and boundary, the
replicas' and subscribers' statements, trust, the targets policies name, and the reference that holds them to
AWS's own.
"""
