"""The pieces of the GPU rank update that :mod:`streamrank.rank.gpu.pagerank` drives: device state and
argument structs (:mod:`.state`), the launch sequence (:mod:`.iterations`), DF/DF-P as one
cooperative launch (:mod:`.frontier_loop`) and the standard-form sweeps (:mod:`.sweeps`)."""
