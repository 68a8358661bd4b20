"""What the web server and the page need beyond the agent: security headers, rate limits, narrow screens and dark
mode, the locked message box, sign-in with Hugging Face, and the workarounds for Gradio in one place."""
