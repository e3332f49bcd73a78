"""A DeepSeek-style complex rotary embedding, then writes into slices of a fresh tensor."""

import torch


class M(torch.nn.Module):
    def forward(self, x, pos):
        f = pos[..., None].float() * torch.arange(1, 5, dtype=torch.float)
        c = torch.polar(torch.ones_like(f), f) * 0.5
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        y = torch.view_as_real(z * c.unsqueeze(1)).flatten(3).type_as(x)
        out = y.new_empty(*y.shape[:-1], 12)
        out[..., :8].copy_(y)
        out[..., 8:].copy_(x[..., :4])
        return out


def get_inputs() -> list:
    return [torch.randn(2, 3, 5, 8), torch.arange(5).expand(2, 5)]


def get_init_inputs() -> list:
    return []


Model = M
