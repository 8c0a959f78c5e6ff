"""Operator and test tools around the stack: they import infra/, infra/ never imports them."""
