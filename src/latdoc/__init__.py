"""latdoc: which kind of slow is your LLM API call?"""
