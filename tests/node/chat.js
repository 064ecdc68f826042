// Three streamed chat calls with Node's openai package, to KEY at BASE; prints each
// answer's text as a JSON string, one a line.
const OpenAI = require("openai");

(async () => {
  const client = new OpenAI({ apiKey: process.env.KEY, baseURL: process.env.BASE });
  for (let i = 0; i < 3; i++) {
    const stream = await client.chat.completions.create({
      model: "lab-sim",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content || "";
    }
    console.log(JSON.stringify(text));
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
