"""Judge providers: the LLMs that read passages and label a citation."""
