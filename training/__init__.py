"""Training and evaluation on top of rummy500_env (torch, sb3-contrib)."""
