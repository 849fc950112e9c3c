"""`doctable plan`: capacity and cost of a workload on the deployed shape, from published figures."""
