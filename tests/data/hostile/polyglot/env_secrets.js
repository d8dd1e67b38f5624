// contained: the caller's environment does not reach the program
console.log(Object.keys(process.env).filter((k) => /SECRET|TOKEN|KEY|CANARY/i.test(k)).join(",") || "clean");
