"""Pretrained sentence encoders, by family: the embedding the decoy validity rule compares
a decoy's original caption with the target image's captions in. Registered in
:mod:`transforms.corpus.encoders.registry`."""
