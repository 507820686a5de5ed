"""Text in a room of its own: the prompt protocol a language model plays by (`protocol`) and the
TextArena game over it (`textarena`, the text extra). The agent that asks a chat endpoint is
`rummy500_env.agents.llm`."""
