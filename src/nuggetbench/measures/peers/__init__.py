"""The measures of nuggetbench's peers that trec_eval does not have, each reproducing the tool
that ir_measures or ranx computes it with.

* :mod:`~nuggetbench.measures.peers.cwl`: the C/W/L measures of cwl_eval (``RBP``, ``SDCG``,
  ``INST``, ``INSQ``, ``NERR8``-``NERR11``, ``BPM``), ir_measures' ``cwl_eval`` provider;
* :mod:`~nuggetbench.measures.peers.gdeval`: gdeval's ``ERR@k`` (its ``nDCG@k`` is
  ``nDCG(dcg=exp-log2)@k``);
* :mod:`~nuggetbench.measures.peers.irm`: ir_measures' own ``Compat`` and ``Accuracy``;
* :mod:`~nuggetbench.measures.peers.ranx`: ranx's ``hits``, ``f1`` and ``dcg`` (``Hits``,
  ``F1``, ``DCG``); :mod:`~nuggetbench.measures.peers.ranx_names` reads ranx's metric names
  (``hit_rate@10``, ``ndcg_burges@10``, ``rbp.95``, ``map@100-l2``) as nuggetbench measures.
"""
