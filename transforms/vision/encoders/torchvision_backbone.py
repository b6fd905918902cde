"""torchvision classification backbones (ResNet-152, the paper's family, or any
``torchvision.models.list_models()`` name): the vector is what the classifier reads, the
input of the model's last linear layer (a ResNet's 2048 pooled features)."""

from typing import ClassVar

from transforms.errors import InputError
from transforms.vision.encoders.base import (
    EncoderSpec,
    TransformEncoder,
    first_line,
    local_checkpoint,
    seeded,
)
from transforms.vision.extra import vision_module


class TorchvisionBackbone(TransformEncoder):
    name: ClassVar[str] = "torchvision"
    default_model: ClassVar[str] = "resnet152"
    summary: ClassVar[str] = (
        "a torchvision classification model; --pretrained names its weights "
        "(IMAGENET1K_V2, DEFAULT), --checkpoint is a state_dict file of it"
    )

    @classmethod
    def load(cls, spec: EncoderSpec) -> "TorchvisionBackbone":
        needed_by = f"--library {cls.name}"
        torch = seeded(needed_by)
        models = vision_module("torchvision", needed_by).models
        model_name = spec.model or cls.default_model
        try:
            weights_enum = models.get_model_weights(model_name)
        except (ValueError, KeyError) as error:
            raise InputError(
                f"--model {model_name}: not a torchvision model with weights "
                "(torchvision.models.list_models() names them)"
            ) from error
        weights = None
        if spec.pretrained:
            try:
                weights = weights_enum[spec.pretrained]
            except KeyError as error:
                names = ", ".join(member.name for member in weights_enum)
                raise InputError(
                    f"--pretrained {spec.pretrained}: {model_name}'s weights are {names}, DEFAULT"
                ) from error
        model = models.get_model(model_name, weights=weights)  # named weights: downloaded
        if spec.checkpoint:
            path = local_checkpoint(spec.checkpoint)
            try:
                model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            except Exception as error:  # torch raises RuntimeError, pickle's and zipfile's own
                raise InputError(
                    f"--checkpoint {spec.checkpoint}: not a state_dict of torchvision's "
                    f"{model_name} ({first_line(error)})"
                ) from error
        if not drop_classifier(model, torch.nn):
            raise InputError(f"--model {model_name}: has no linear classifier to read below")
        # the weights' own preprocessing (resize, crop, normalise); a checkpoint gets the
        # default weights' (ImageNet's), which only describe the transform: nothing is fetched
        return cls(model, (weights or weights_enum.DEFAULT).transforms())

    def features(self, pixels):
        return self.model(pixels)


def drop_classifier(model, nn) -> bool:
    """Replaces the model's last linear layer (its classifier) by the identity, so that the
    model returns what the classifier read: the penultimate layer's features. False when the
    model has no linear layer (SqueezeNet's classifier is a convolution)."""
    names = [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    if not names:
        return False
    parent, _, child = names[-1].rpartition(".")
    setattr(model.get_submodule(parent), child, nn.Identity())
    return True
