"""Fréchet distance between Gaussians fitted to two sample sets: the task's metric (read-only)."""

from methods.bfn_solver.fd import frechet_distance

__all__ = ["frechet_distance"]
