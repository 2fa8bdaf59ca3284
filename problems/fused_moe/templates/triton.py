import torch
import triton
import triton.language as tl


@triton.jit
def route_kernel(logits_ptr, ids_ptr, weights_ptr, experts, TOPK: tl.constexpr, BLOCK_E: tl.constexpr):
    """One program per token: softmax over the experts, top-k, renormalized weights."""
    token = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_E)
    logits = tl.load(logits_ptr + token * experts + offsets, mask=offsets < experts,
                     other=-float("inf"))
    e = tl.exp(logits - tl.max(logits, axis=0))
    probs = e / tl.sum(e, axis=0)
    remaining = probs
    total = 0.0
    for _ in tl.static_range(TOPK):
        total += tl.max(remaining, axis=0)
        remaining = tl.where(offsets == tl.argmax(remaining, axis=0), -1.0, remaining)
    remaining = probs
    for j in tl.static_range(TOPK):
        best = tl.argmax(remaining, axis=0)
        tl.store(ids_ptr + token * TOPK + j, best)
        tl.store(weights_ptr + token * TOPK + j, tl.max(remaining, axis=0) / total)
        remaining = tl.where(offsets == best, -1.0, remaining)


@triton.jit
def expert_up_kernel(x_ptr, w1_ptr, ids_ptr, h_ptr, hidden, inter, TOPK: tl.constexpr,
                     BLOCK_I: tl.constexpr, BLOCK_H: tl.constexpr):
    """One program per (token, slot) and block of `inter`: h = silu(W_g x) * (W_u x)."""
    slot = tl.program_id(0)  # token * TOPK + j
    rows = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    expert = tl.load(ids_ptr + slot).to(tl.int64)
    token = slot // TOPK
    gate = tl.zeros((BLOCK_I,), dtype=tl.float32)
    up = tl.zeros((BLOCK_I,), dtype=tl.float32)
    w_gate = w1_ptr + expert * 2 * inter * hidden
    for h0 in range(0, hidden, BLOCK_H):
        cols = h0 + tl.arange(0, BLOCK_H)
        x = tl.load(x_ptr + token * hidden + cols, mask=cols < hidden, other=0.0).to(tl.float32)
        mask = (rows[:, None] < inter) & (cols[None, :] < hidden)
        wg = tl.load(w_gate + rows[:, None] * hidden + cols[None, :], mask=mask, other=0.0)
        wu = tl.load(w_gate + (rows[:, None] + inter) * hidden + cols[None, :], mask=mask, other=0.0)
        gate += tl.sum(wg.to(tl.float32) * x[None, :], axis=1)
        up += tl.sum(wu.to(tl.float32) * x[None, :], axis=1)
    h = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(h_ptr + slot * inter + rows, h, mask=rows < inter)


@triton.jit
def expert_down_kernel(h_ptr, w2_ptr, ids_ptr, weights_ptr, y_ptr, hidden, inter,
                       TOPK: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_I: tl.constexpr):
    """One program per token and block of `hidden`: y = sum_j g_j * W2[e_j] h_j."""
    token = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    acc = tl.zeros((BLOCK_H,), dtype=tl.float32)
    for j in tl.static_range(TOPK):
        slot = token * TOPK + j
        expert = tl.load(ids_ptr + slot).to(tl.int64)
        weight = tl.load(weights_ptr + slot)
        part = tl.zeros((BLOCK_H,), dtype=tl.float32)
        for i0 in range(0, inter, BLOCK_I):
            cols = i0 + tl.arange(0, BLOCK_I)
            h = tl.load(h_ptr + slot * inter + cols, mask=cols < inter, other=0.0)
            w = tl.load(w2_ptr + expert * hidden * inter + rows[:, None] * inter + cols[None, :],
                        mask=(rows[:, None] < hidden) & (cols[None, :] < inter), other=0.0)
            part += tl.sum(w.to(tl.float32) * h[None, :], axis=1)
        acc += weight * part
    tl.store(y_ptr + token * hidden + rows, acc.to(tl.float16), mask=rows < hidden)


def run_kernel(x, router_logits, w1, w2, y, tokens, hidden, inter, experts, topk):
    device = x.device
    ids = torch.empty(tokens * topk, dtype=torch.int32, device=device)
    weights = torch.empty(tokens * topk, dtype=torch.float32, device=device)
    h = torch.empty(tokens * topk, inter, dtype=torch.float32, device=device)
    route_kernel[(tokens,)](router_logits, ids, weights, experts, TOPK=topk,
                            BLOCK_E=triton.next_power_of_2(experts))
    # on the CPU, Triton's interpreter pays per program and loop step: fewer, larger blocks
    block_i, block_h = (128, 128) if device.type == "cpu" else (32, 64)
    expert_up_kernel[(tokens * topk, triton.cdiv(inter, block_i))](
        x, w1, ids, h, hidden, inter, TOPK=topk, BLOCK_I=block_i, BLOCK_H=block_h)
    expert_down_kernel[(tokens, triton.cdiv(hidden, block_h))](
        h, w2, ids, weights, y, hidden, inter, TOPK=topk, BLOCK_H=block_h, BLOCK_I=block_i)
