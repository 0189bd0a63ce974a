"""A supervised training loop that only sees TensorDicts: the dataset, the model
(TensorDictModule + TensorDictSequential) and the loss all read and write keys."""

import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential


def make_dataset(n: int = 512) -> TensorDict:
    """Two-feature-group regression: y = sin(x @ w) + 0.5 * z, plus a class label."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    z = torch.randn(n, 1, generator=g)
    w = torch.randn(4, 1, generator=g)
    y = torch.sin(x @ w) + 0.5 * z
    return TensorDict({"features": {"x": x, "z": z}, "target": y,
                       "label": (y.squeeze(-1) > 0).long()}, batch_size=[n])


def make_model() -> TensorDictSequential:
    torch.manual_seed(0)
    encoder = TensorDictModule(nn.Sequential(nn.Linear(4, 32), nn.Tanh()),
                               in_keys=[("features", "x")], out_keys=["hidden"])
    head = TensorDictModule(lambda hidden, z: torch.cat([hidden, z], -1),
                            in_keys=["hidden", ("features", "z")], out_keys=["joined"])
    regressor = TensorDictModule(nn.Linear(33, 1), in_keys=["joined"], out_keys=["prediction"])
    classifier = TensorDictModule(nn.Linear(33, 2), in_keys=["joined"], out_keys=["logits"])
    return TensorDictSequential(encoder, head, regressor, classifier)


def loss_module(td: TensorDict) -> torch.Tensor:
    mse = nn.functional.mse_loss(td["prediction"], td["target"])
    ce = nn.functional.cross_entropy(td["logits"], td["label"])
    td.set("loss", (mse + ce).expand(td.batch_size))
    return mse + ce


def test_training_loop_reaches_low_loss():
    data = make_dataset()
    train, valid = data[:448], data[448:]
    model = make_model()
    assert model.in_keys == [("features", "x"), ("features", "z")]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)

    with torch.no_grad():
        initial = loss_module(model(valid.clone())).item()
    for _epoch in range(15):
        perm = torch.randperm(train.batch_size[0], generator=torch.Generator().manual_seed(_epoch))
        for idx in perm.split(112):
            batch = train[idx]
            tensordict = model(batch)
            loss = loss_module(tensordict)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    with torch.no_grad():
        result = model(valid.clone())
        final = loss_module(result).item()
        accuracy = (result["logits"].argmax(-1) == result["label"]).float().mean().item()
    assert final < 0.5 * initial and final < 0.6, (initial, final)
    assert accuracy > 0.85
    assert set(result.keys()) >= {"features", "hidden", "joined", "prediction", "logits", "loss"}
